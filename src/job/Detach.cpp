#include "job/Detach.hpp"

#include "job/Process.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace colmet::job {
namespace fs = std::filesystem;

std::vector<fs::path> root_cgroup_procs_files(const fs::path &cgroup_root)
{
    std::vector<fs::path> out;
    std::error_code ec;
    if (fs::exists(cgroup_root / "cgroup.controllers", ec)) {
        out.push_back(cgroup_root / "cgroup.procs");
        return out;
    }
    for (fs::directory_iterator it(cgroup_root, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_symlink(ec))
            continue;  // cpu -> cpu,cpuacct: the same hierarchy
        auto procs = it->path() / "cgroup.procs";
        if (fs::exists(procs, ec))
            out.push_back(procs);
    }
    return out;
}

namespace {

// Only async-signal-safe calls between fork() and exec().
void write_all(int fd, const void *buf, size_t len)
{
    const char *p = static_cast<const char *>(buf);
    while (len > 0) {
        ssize_t n = ::write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        len -= static_cast<size_t>(n);
    }
}

ssize_t read_full(int fd, void *buf, size_t len)
{
    char *p = static_cast<char *>(buf);
    size_t got = 0;
    while (got < len) {
        ssize_t n = ::read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(got);
}

[[noreturn]] void exec_daemon(char *const *args, const std::vector<std::string> &procs_files, int report_fd)
{
    for (const auto &f : procs_files) {
        int fd = ::open(f.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            write_all(fd, "0\n", 2);  // "0": the writing process itself
            ::close(fd);
        }
    }
    if (::chdir("/") != 0) {
        // "/" always exists; nothing useful to do otherwise.
    }
    ::umask(022);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        ::dup2(devnull, 2);
        if (devnull > 2)
            ::close(devnull);
    }
    // Everything else goes, except the report pipe (close-on-exec).
    if (report_fd > 3)
        ::close_range(3, static_cast<unsigned>(report_fd - 1), 0);
    ::close_range(static_cast<unsigned>(report_fd + 1), ~0U, 0);
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP)
            ::signal(sig, SIG_DFL);
    sigset_t mask = term_signals();
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    ::execv(args[0], args);
    int err = errno;
    write_all(report_fd, &err, sizeof err);
    _exit(127);
}

}  // namespace

Result<pid_t> spawn_detached(const std::vector<std::string> &argv, const fs::path &cgroup_root)
{
    if (argv.empty())
        return Error::invalid("spawn: empty command");
    // Everything the children need is built before fork().
    std::vector<char *> args = exec_argv(argv);
    std::vector<std::string> procs_files;
    for (const auto &p : root_cgroup_procs_files(cgroup_root))
        procs_files.push_back(p.string());

    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0)
        return Error::system("pipe2", argv[0], errno);
    if (pipefd[1] < 3) {
        // Started with stdio closed: keep the report end clear of 0-2, which
        // the daemon points at /dev/null.
        int high = ::fcntl(pipefd[1], F_DUPFD_CLOEXEC, 3);
        if (high >= 0) {
            ::close(pipefd[1]);
            pipefd[1] = high;
        }
    }

    // SIGTERM must not be deliverable in the daemon before colmet-node blocks
    // it: block it around fork() (the children inherit the mask).
    sigset_t term = term_signals(), saved;
    ::sigprocmask(SIG_BLOCK, &term, &saved);
    pid_t first = ::fork();
    if (first < 0) {
        int err = errno;
        ::sigprocmask(SIG_SETMASK, &saved, nullptr);
        ::close(pipefd[0]);
        ::close(pipefd[1]);
        return Error::system("fork", argv[0], err);
    }
    if (first == 0) {
        ::close(pipefd[0]);
        ::setsid();
        pid_t second = ::fork();
        if (second < 0) {
            int err = errno;
            pid_t none = 0;
            write_all(pipefd[1], &none, sizeof none);
            write_all(pipefd[1], &err, sizeof err);
            _exit(1);
        }
        if (second > 0) {
            write_all(pipefd[1], &second, sizeof second);
            _exit(0);
        }
        exec_daemon(args.data(), procs_files, pipefd[1]);
    }
    ::sigprocmask(SIG_SETMASK, &saved, nullptr);
    ::close(pipefd[1]);
    int status = 0;
    while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
    }
    pid_t daemon = 0;
    int exec_errno = 0;
    ssize_t n = read_full(pipefd[0], &daemon, sizeof daemon);
    if (n == static_cast<ssize_t>(sizeof daemon))
        n = read_full(pipefd[0], &exec_errno, sizeof exec_errno);
    else
        n = 0;
    ::close(pipefd[0]);
    if (daemon <= 0)
        return Error::system("fork", argv[0], exec_errno ? exec_errno : EAGAIN);
    if (n == static_cast<ssize_t>(sizeof exec_errno))
        return Error::system("exec", argv[0], exec_errno);
    return daemon;
}

}  // namespace colmet::job
