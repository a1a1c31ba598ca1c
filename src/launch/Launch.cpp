#include "launch/Launch.hpp"

#include "common/exec_argv.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace colmet::launch {
namespace {

// The child's steps, as the report names them.
enum Step : int { step_fork = 1, step_session, step_gate, step_stdio, step_workdir, step_user, step_exec };

const char *step_name(int step)
{
    switch (step) {
    case step_fork:
        return "fork";
    case step_session:
        return "setsid";
    case step_gate:
        return "wait for release";
    case step_stdio:
        return "open standard descriptors";
    case step_workdir:
        return "chdir";
    case step_user:
        return "become the user";
    default:
        return "exec";
    }
}

// What the child processes tell the parent through the report pipe: the
// program's pid (the middle process of a detached launch), or the step that
// failed and its errno. One write each, smaller than PIPE_BUF: atomic, so
// that a detached program's failure and the middle process's pid, written
// in either order, never mix.
struct Report {
    enum Kind : int { none = 0, program_pid = 1, failure = 2 };
    int kind = none;
    int step = 0;
    int value = 0;  // the pid, or the errno
};

// Everything the child needs, made before fork().
struct Prepared {
    std::vector<char *> argv;
    std::vector<char *> envp;
    char **env = nullptr;
    sigset_t exec_mask{};
};

// Only async-signal-safe calls from here to the end of the namespace, but
// for the parent's read_full.
void write_all(int fd, const void *buf, size_t len)
{
    const char *p = static_cast<const char *>(buf);
    while (len > 0) {
        const ssize_t n = ::write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        len -= static_cast<size_t>(n);
    }
}

[[noreturn]] void fail(int report_fd, int step, int err)
{
    const Report r{Report::failure, step, err};
    write_all(report_fd, &r, sizeof r);
    ::_exit(step != step_exec ? 70 : err == ENOENT ? 127 : 126);
}

// One standard descriptor: 0 when done, else the errno.
int set_stdio(const Stdio &s, int target)
{
    int fd = -1;
    switch (s.kind) {
    case Stdio::Kind::inherit:
        return 0;
    case Stdio::Kind::fd:
        return ::dup2(s.fd, target) < 0 ? errno : 0;
    case Stdio::Kind::null:
        fd = ::open("/dev/null", target == 0 ? O_RDONLY : O_WRONLY);
        break;
    case Stdio::Kind::append:
        fd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        break;
    }
    if (fd < 0)
        return errno;
    if (fd != target) {
        const int r = ::dup2(fd, target);
        const int err = errno;
        ::close(fd);
        if (r < 0)
            return err;
    }
    return 0;
}

void set_signals(const LaunchSpec &spec, const sigset_t &mask)
{
    if (spec.signals == Signals::reset) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig)
            if (sig != SIGKILL && sig != SIGSTOP)
                ::sigaction(sig, &dfl, nullptr);
    } else {
        // Handled signals go back to their default (exec would do it too,
        // but a handler of the launcher must not run in the child).
        for (int sig = 1; sig < NSIG; ++sig) {
            struct sigaction now {};
            if (sig != SIGKILL && sig != SIGSTOP && ::sigaction(sig, nullptr, &now) == 0 && now.sa_handler != SIG_IGN &&
                now.sa_handler != SIG_DFL) {
                struct sigaction dfl {};
                dfl.sa_handler = SIG_DFL;
                ::sigaction(sig, &dfl, nullptr);
            }
        }
    }
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
}

// The program's own process, from its session to exec.
[[noreturn]] void run_child(const LaunchSpec &spec, const Prepared &p, int gate_fd, int report_fd)
{
    for (const auto &f : spec.join_cgroups) {
        const int fd = ::open(f.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            write_all(fd, "0\n", 2);  // "0": the writing process itself
            ::close(fd);
        }
    }
    if (gate_fd >= 0) {
        char go = 0;
        ssize_t n;
        while ((n = ::read(gate_fd, &go, 1)) < 0 && errno == EINTR) {
        }
        if (n != 1 || go != 'g')
            ::_exit(70);
        ::close(gate_fd);
    }
    if (int err = set_stdio(spec.in, 0))
        fail(report_fd, step_stdio, err);
    if (int err = set_stdio(spec.out, 1))
        fail(report_fd, step_stdio, err);
    if (int err = set_stdio(spec.err, 2))
        fail(report_fd, step_stdio, err);
    if (!spec.workdir.empty() && ::chdir(spec.workdir.c_str()) != 0)
        fail(report_fd, step_workdir, errno);
    if (spec.umask >= 0)
        ::umask(static_cast<mode_t>(spec.umask));
    if (spec.user)
        if (int err = become(*spec.user))
            fail(report_fd, step_user, err);
    if (!spec.keep_other_fds) {
        // Everything else goes, except the report pipe (close-on-exec).
        if (report_fd > 3)
            ::syscall(SYS_close_range, 3U, static_cast<unsigned>(report_fd - 1), 0U);
        ::syscall(SYS_close_range, static_cast<unsigned>(report_fd + 1), ~0U, 0U);
    }
    set_signals(spec, p.exec_mask);
    if (spec.search_path)
        ::execvpe(p.argv[0], p.argv.data(), p.env);
    else
        ::execve(p.argv[0], p.argv.data(), p.env);
    fail(report_fd, step_exec, errno);
}

// The forked child: its session, the second fork when detached, the program.
[[noreturn]] void child_main(const LaunchSpec &spec, const Prepared &p, int gate_fd, int report_fd)
{
    if (spec.session == Session::own_session && ::setsid() < 0)
        fail(report_fd, step_session, errno);
    if (spec.session == Session::own_group && ::setpgid(0, 0) != 0)
        fail(report_fd, step_session, errno);
    if (!spec.detach)
        run_child(spec, p, gate_fd, report_fd);
    const pid_t program = ::fork();
    if (program == 0)
        run_child(spec, p, gate_fd, report_fd);
    if (program < 0)
        fail(report_fd, step_fork, errno);
    const Report r{Report::program_pid, 0, program};
    write_all(report_fd, &r, sizeof r);
    ::_exit(0);
}

ssize_t read_full(int fd, void *buf, size_t len)
{
    char *p = static_cast<char *>(buf);
    size_t got = 0;
    while (got < len) {
        const ssize_t n = ::read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(got);
}

// A close-on-exec pipe whose ends are 3 or more: a launcher started with
// its standard descriptors closed must not hand them out as 0-2, which the
// child replaces.
Result<std::pair<UniqueFd, UniqueFd>> high_pipe()
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return Error::system("pipe2", "", errno);
    UniqueFd ends[2] = {UniqueFd(fds[0]), UniqueFd(fds[1])};
    for (auto &end : ends)
        if (end.get() < 3) {
            const int high = ::fcntl(end.get(), F_DUPFD_CLOEXEC, 3);
            if (high < 0)
                return Error::system("fcntl F_DUPFD_CLOEXEC", "", errno);
            end.reset(high);
        }
    return std::make_pair(std::move(ends[0]), std::move(ends[1]));
}

Result<void> check(const LaunchSpec &spec)
{
    if (spec.argv.empty() || spec.argv.front().empty())
        return Error::invalid("launch: no program");
    if (!spec.search_path && spec.argv.front().find('/') == std::string::npos)
        return Error::invalid("launch: '" + spec.argv.front() + "' is not a path");
    if (spec.detach && spec.gated)
        return Error::invalid("launch: a detached child cannot be gated");
    if (spec.term_blocked && spec.signals != Signals::reset)
        return Error::invalid("launch: term_blocked needs Signals::reset");
    for (const Stdio *s : {&spec.in, &spec.out, &spec.err})
        if (s->kind == Stdio::Kind::fd && s->fd < 3)
            return Error::invalid("launch: a standard descriptor's source must be 3 or more");
    return {};
}

}  // namespace

sigset_t term_signals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

Child::Child(pid_t pid, UniqueFd gate, UniqueFd report, std::string program)
    : m_pid(pid), m_gate(std::move(gate)), m_report(std::move(report)), m_program(std::move(program))
{
}

Result<void> Child::release(bool go)
{
    if (m_gate.valid()) {
        const char c = go ? 'g' : 'x';
        const ssize_t n = ::write(m_gate.get(), &c, 1);
        const int err = errno;
        m_gate.reset();
        if (n != 1)
            return Error::system("release", m_program, err);
        if (!go)
            return {};
    }
    if (!m_report.valid())
        return {};
    Report r;
    const ssize_t n = read_full(m_report.get(), &r, sizeof r);
    m_report.reset();
    if (n == static_cast<ssize_t>(sizeof r) && r.kind == Report::failure)
        return Error::system(step_name(r.step), m_program, r.value);
    return {};  // end of file: the program runs
}

Result<Child> start(const LaunchSpec &spec)
{
    if (auto ok = check(spec); !ok)
        return ok.error();
    Prepared p;
    p.argv = exec_argv(spec.argv);
    if (spec.env) {
        p.envp = exec_argv(*spec.env);
        p.env = p.envp.data();
    } else {
        p.env = environ;
    }
    auto report = high_pipe();
    if (!report)
        return report.error();
    UniqueFd gate_read, gate_write;
    if (spec.gated) {
        auto gate = high_pipe();
        if (!gate)
            return gate.error();
        gate_read = std::move(gate->first);
        gate_write = std::move(gate->second);
    }

    // Every signal blocked across fork(): no handler of the launcher runs in
    // the child before the child sets its own; the mask it execs with is
    // chosen here.
    sigset_t all, saved;
    sigfillset(&all);
    ::sigprocmask(SIG_SETMASK, &all, &saved);
    if (spec.signals == Signals::inherit)
        p.exec_mask = saved;
    else if (spec.term_blocked)
        p.exec_mask = term_signals();
    else
        sigemptyset(&p.exec_mask);
    const pid_t pid = ::fork();
    const int fork_errno = errno;
    if (pid == 0) {
        report->first.reset();
        gate_write.reset();
        child_main(spec, p, gate_read.get(), report->second.get());
    }
    ::sigprocmask(SIG_SETMASK, &saved, nullptr);
    if (pid < 0)
        return Error::system("fork", spec.argv.front(), fork_errno);
    report->second.reset();
    gate_read.reset();
    if (!spec.detach)
        return Child(pid, std::move(gate_write), std::move(report->first), spec.argv.front());

    // Detached: the middle process sends the program's pid and exits; the
    // program's own failure, if any, may come before or after. Everything
    // is read, up to the end of file (the program ran, or both ended).
    pid_t program = 0;
    Report failed;
    for (Report r; read_full(report->first.get(), &r, sizeof r) == static_cast<ssize_t>(sizeof r);) {
        if (r.kind == Report::program_pid)
            program = r.value;
        else if (r.kind == Report::failure && failed.kind == Report::none)
            failed = r;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (failed.kind == Report::failure)
        return Error::system(step_name(failed.step), spec.argv.front(), failed.value);
    if (program <= 0)
        return Error::system("fork", spec.argv.front(), EAGAIN);
    return Child(program, {}, {}, spec.argv.front());
}

Result<pid_t> launch(const LaunchSpec &spec)
{
    auto child = start(spec);
    if (!child)
        return child.error();
    if (auto ran = child->release(); !ran) {
        int status = 0;
        if (!spec.detach)
            while (::waitpid(child->pid(), &status, 0) < 0 && errno == EINTR) {
            }
        return ran.error();
    }
    return child->pid();
}

}  // namespace colmet::launch
