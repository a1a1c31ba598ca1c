#include "job/Process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <string_view>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace colmet::job {

namespace {

void redirect(const std::string &path, int target)
{
    if (path.empty())
        return;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::dup2(fd, target);
        ::close(fd);
    }
}

}  // namespace

Result<std::optional<Credentials>> sudo_invoker()
{
    const char *name = std::getenv("SUDO_USER");
    if (::geteuid() != 0 || name == nullptr || *name == '\0' || std::string_view(name) == "root")
        return std::optional<Credentials>();
    std::vector<char> buf(16384);
    passwd pw{};
    passwd *found = nullptr;
    if (int err = ::getpwnam_r(name, &pw, buf.data(), buf.size(), &found); err != 0 || found == nullptr)
        return Error(Errc::not_found, std::string("sudo's user '") + name +
                                          "' (SUDO_USER) is not known here: cannot run the command as that user "
                                          "(--as-root runs it as root)");
    Credentials c;
    c.user = pw.pw_name;
    c.uid = pw.pw_uid;
    c.gid = pw.pw_gid;
    int n = 64;
    c.groups.resize(static_cast<size_t>(n));
    while (::getgrouplist(pw.pw_name, pw.pw_gid, c.groups.data(), &n) < 0) {
        c.groups.resize(static_cast<size_t>(n) + 16);
        n = static_cast<int>(c.groups.size());
    }
    c.groups.resize(static_cast<size_t>(n));
    const std::string home = pw.pw_dir, shell = pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh";
    const std::vector<std::pair<std::string, std::string>> set = {
        {"HOME", home}, {"USER", c.user}, {"LOGNAME", c.user}, {"SHELL", shell}, {"MAIL", "/var/mail/" + c.user}};
    for (char **e = environ; *e != nullptr; ++e) {
        std::string_view var = *e;
        const std::string_view key = var.substr(0, var.find('='));
        if (std::none_of(set.begin(), set.end(), [key](const auto &kv) { return kv.first == key; }))
            c.env.emplace_back(var);
    }
    for (const auto &[key, value] : set)
        c.env.push_back(std::string(key).append("=").append(value));
    return std::optional<Credentials>(std::move(c));
}

int become(const Credentials &c)
{
    if (::setgroups(c.groups.size(), c.groups.data()) != 0)
        return errno;
    if (::setresgid(c.gid, c.gid, c.gid) != 0)
        return errno;
    if (::setresuid(c.uid, c.uid, c.uid) != 0)
        return errno;
    return 0;
}

sigset_t term_signals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

Result<pid_t> spawn(const std::vector<std::string> &argv, const SpawnOptions &options)
{
    if (argv.empty())
        return Error::invalid("spawn: empty command");
    std::vector<char *> args = exec_argv(argv);

    // With keep_term_blocked the child must never run a moment with SIGTERM
    // deliverable: block it around fork() so the child starts blocked.
    sigset_t term = term_signals(), saved;
    if (options.keep_term_blocked)
        sigprocmask(SIG_BLOCK, &term, &saved);
    pid_t pid = ::fork();
    if (pid != 0 && options.keep_term_blocked)
        sigprocmask(SIG_SETMASK, &saved, nullptr);
    if (pid < 0)
        return Error::system("fork", argv[0], errno);
    if (pid == 0) {
        if (options.new_session)
            ::setsid();
        sigset_t mask;
        sigemptyset(&mask);
        if (options.keep_term_blocked) {
            sigaddset(&mask, SIGTERM);
            sigaddset(&mask, SIGINT);
        }
        sigprocmask(SIG_SETMASK, &mask, nullptr);
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        std::signal(SIGQUIT, SIG_DFL);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            ::dup2(devnull, 0);
            ::close(devnull);
        }
        redirect(options.stdout_path, 1);
        redirect(options.stderr_path, 2);
        ::close_range(3, ~0U, 0);
        ::execv(args[0], args.data());
        _exit(127);
    }
    return pid;
}

std::optional<int> wait_for(pid_t pid, int timeout_ms)
{
    int status = 0;
    if (timeout_ms < 0) {
        while (::waitpid(pid, &status, 0) < 0)
            if (errno != EINTR)
                return 0;
        return status;
    }
    for (int waited = 0;; waited += 10) {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return 0;  // not our child any more
        if (waited >= timeout_ms)
            return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

int terminate(pid_t pid, int grace_ms)
{
    ::kill(pid, SIGTERM);
    if (auto status = wait_for(pid, grace_ms))
        return *status;
    ::kill(pid, SIGKILL);
    return wait_for(pid, -1).value_or(0);
}

int exit_code_of(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return 1;
}

std::filesystem::path find_program(const std::string &name)
{
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    std::vector<std::filesystem::path> dirs;
    if (!ec)
        dirs.push_back(self.parent_path());
    dirs.emplace_back(COLMET_SBINDIR);
    dirs.emplace_back(COLMET_BINDIR);
    if (const char *path = std::getenv("PATH")) {
        std::string p = path;
        size_t start = 0;
        while (start <= p.size()) {
            size_t colon = p.find(':', start);
            dirs.emplace_back(p.substr(start, colon - start));
            if (colon == std::string::npos)
                break;
            start = colon + 1;
        }
    }
    for (const auto &dir : dirs) {
        auto candidate = dir / name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

}  // namespace colmet::job
