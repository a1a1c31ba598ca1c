#include "Spawn.hpp"

#include "common/exec_argv.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace colmet::spank {

namespace {

// Owns one posix_spawn object (file actions or attributes): Init and Destroy
// are its two functions; get() is valid only when ok().
template <typename T, int (*Init)(T *), int (*Destroy)(T *)>
class SpawnObject {
public:
    SpawnObject() { m_ok = Init(&m_value) == 0; }
    ~SpawnObject()
    {
        if (m_ok)
            Destroy(&m_value);
    }
    SpawnObject(const SpawnObject &) = delete;
    SpawnObject &operator=(const SpawnObject &) = delete;
    T *get() { return &m_value; }
    bool ok() const { return m_ok; }

private:
    T m_value{};
    bool m_ok = false;
};

using FileActions =
    SpawnObject<posix_spawn_file_actions_t, posix_spawn_file_actions_init, posix_spawn_file_actions_destroy>;
using SpawnAttr = SpawnObject<posix_spawnattr_t, posix_spawnattr_init, posix_spawnattr_destroy>;

}  // namespace

Result<SpawnResult> run_helper(const std::vector<std::string> &argv, double timeout_s, bool keep_stderr)
{
    if (argv.empty() || argv.front().empty() || argv.front().front() != '/')
        return Error::invalid("helper path must be absolute");
    std::vector<char *> cargv = exec_argv(argv);
    char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    char *envp[] = {path_env, nullptr};

    FileActions fa;
    SpawnAttr attr;
    if (!fa.ok() || !attr.ok())
        return Error::system("posix_spawn init", "", ENOMEM);
    posix_spawn_file_actions_addopen(fa.get(), 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(fa.get(), 1, "/dev/null", O_WRONLY, 0);
    if (!keep_stderr)
        posix_spawn_file_actions_addopen(fa.get(), 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(fa.get(), 3);
    // Default signal dispositions and an empty mask: slurmstepd blocks
    // signals the helper and its sampler must receive.
    sigset_t all;
    sigset_t none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(attr.get(), &all);
    posix_spawnattr_setsigmask(attr.get(), &none);
    posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(attr.get(), 0);

    auto start = std::chrono::steady_clock::now();
    pid_t pid = -1;
    int rc = posix_spawn(&pid, cargv[0], fa.get(), attr.get(), cargv.data(), envp);
    if (rc != 0)
        return Error::system("run", argv.front(), rc);

    SpawnResult out;
    auto deadline = start + std::chrono::duration<double>(timeout_s);
    auto pause = std::chrono::milliseconds(2);
    for (;;) {
        int status = 0;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            out.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            break;
        }
        if (w < 0 && errno == ECHILD) {
            // The host program reaps its children itself (a SIGCHLD handler,
            // or SIGCHLD ignored): the status is lost, so wait for the pid to
            // disappear instead.
            out.status_unknown = true;
            if (::kill(pid, 0) != 0) {
                out.exit_status = 0;
                break;
            }
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            kill(pid, SIGKILL);
            while (!out.status_unknown && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            out.timed_out = true;
            break;
        }
        std::this_thread::sleep_for(pause);
        if (pause < std::chrono::milliseconds(50))
            pause *= 2;
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
}

Result<pid_t> spawn_detached(const std::vector<std::string> &argv)
{
    if (argv.empty() || argv.front().empty() || argv.front().front() != '/')
        return Error::invalid("helper path must be absolute");
    // Everything the children need is prepared before fork(): the host
    // program is multi-threaded, so only async-signal-safe calls follow.
    std::vector<char *> cargv = exec_argv(argv);
    char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    char *envp[] = {path_env, nullptr};
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0)
        return Error::system("pipe", "", errno);

    pid_t mid = ::fork();
    if (mid < 0) {
        int err = errno;
        ::close(report[0]);
        ::close(report[1]);
        return Error::system("fork", "", err);
    }
    if (mid == 0) {
        ::setsid();
        pid_t helper = ::fork();
        if (helper == 0) {
            struct sigaction dfl {};
            dfl.sa_handler = SIG_DFL;
            for (int sig = 1; sig < NSIG; ++sig)
                ::sigaction(sig, &dfl, nullptr);
            sigset_t none;
            sigemptyset(&none);
            ::sigprocmask(SIG_SETMASK, &none, nullptr);
            int devnull = ::open("/dev/null", O_RDWR);
            if (devnull >= 0) {
                ::dup2(devnull, 0);
                ::dup2(devnull, 1);
                ::dup2(devnull, 2);
            }
            ::syscall(SYS_close_range, 3U, ~0U, 0U);
            ::execve(cargv[0], cargv.data(), envp);
            ::_exit(127);
        }
        ssize_t w = ::write(report[1], &helper, sizeof helper);
        ::_exit(w == static_cast<ssize_t>(sizeof helper) && helper > 0 ? 0 : 1);
    }
    ::close(report[1]);
    pid_t helper = -1;
    ssize_t n = ::read(report[0], &helper, sizeof helper);
    ::close(report[0]);
    int status = 0;
    while (::waitpid(mid, &status, 0) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof helper) || helper <= 0)
        return Error::system("fork", argv.front(), EAGAIN);
    return helper;
}

}  // namespace colmet::spank
