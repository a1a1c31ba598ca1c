// colmet-cputime: the whole-life CPU time of a command, as its parent sees it,
// for the tests' CPU checks (the truth colmet's cgroup CPU time and perf
// task_clock are compared with).
//
//   colmet-cputime [--output FILE] -- CMD ARGS...
//
// Runs CMD (searched in PATH), waits for it with wait4 and writes one line of
// JSON:
//
//   {"cpu_seconds": 2.013400, "user_seconds": ..., "system_seconds": ...,
//    "command_cpu_seconds": ..., "wrapper_cpu_seconds": ..., "exit_status": 0}
//
// command_cpu_seconds is CMD's whole life from wait4's rusage: user + system
// of CMD itself, its exit and teardown included, plus every descendant CMD
// waited for. wrapper_cpu_seconds is colmet-cputime's own RUSAGE_SELF (it sits
// in the measured cgroup too; about a millisecond), taken after the wait, so
// its own exit is the one thing not counted. cpu_seconds = user_seconds +
// system_seconds = the sum of the two: what cgroup accounting sees of the
// wrapper and the command. Processes CMD left behind unwaited (daemons) are
// not in it. Whatever ran in the process before it exec'ed colmet-cputime
// (a shell that `exec`s it) is in RUSAGE_SELF too.
//
// Where the line goes (one convention): appended to FILE with --output (FILE
// is opened, created if need be, before CMD starts, so a bad path is an error
// before anything runs; appending, never truncating, makes FILE=/dev/stdout
// safe when stdout is a file), else to stderr, so that CMD's stdout stays
// CMD's alone. Read the last line of FILE.
//
// Exit status: CMD's exit status, 128+N when a signal N killed it; 126/127
// when CMD cannot be executed / is not found (the JSON line is still written);
// 64 for a usage error, 73 when FILE cannot be created, 71 when fork fails, 74
// when the JSON line cannot be written. SIGTERM, SIGINT and SIGHUP are passed
// on to CMD, except when the kernel sent them (a terminal's Ctrl-C): CMD, in
// the same foreground process group, got those itself. One that colmet-cputime
// started with ignored stays ignored, for CMD too.
// In the sanitizer build, LeakSanitizer scans the whole heap when a process
// exits: 15-35 ms of CPU here, spent after RUSAGE_SELF was taken, in the
// measured cgroup, so a 1 s workload's check went 2.3 % over. The wrapper
// frees nothing worth checking; its own scan is turned off (this hook is
// LeakSanitizer's documented switch, and only this binary has it: the
// command keeps its own leak check, which wait4 counts).
// NOLINTBEGIN(bugprone-reserved-identifier): the name is LeakSanitizer's.
extern "C" int __lsan_is_turned_off();
extern "C" int __lsan_is_turned_off() { return 1; }
// NOLINTEND(bugprone-reserved-identifier)

#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {

volatile sig_atomic_t child_pid = 0;

void forward(int sig, siginfo_t *info, void *)
{
    if (info != nullptr && info->si_code == SI_KERNEL)
        return;  // from the terminal: the command's process group got it too
    pid_t pid = child_pid;
    if (pid > 0)
        kill(pid, sig);
}

constexpr int forwarded[] = {SIGTERM, SIGINT, SIGHUP};

int usage(const char *why)
{
    std::fprintf(stderr, "colmet-cputime: %s\nusage: colmet-cputime [--output FILE] -- CMD ARGS...\n", why);
    return 64;
}

double seconds(const timeval &tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; }

}  // namespace

int main(int argc, char **argv)
{
    std::string output;
    bool dashdash = false;
    int i = 1;
    for (; i < argc && !dashdash; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            dashdash = true;
            continue;
        }
        if (a == "--output") {
            if (i + 1 >= argc)
                return usage("--output needs a FILE");
            output = argv[++i];
        } else if (a.rfind("--output=", 0) == 0) {
            output = a.substr(9);
        } else {
            return usage(("unknown argument '" + a + "' (the command goes after --)").c_str());
        }
        if (output.empty())
            return usage("--output needs a FILE");
    }
    if (!dashdash || i >= argc)
        return usage("no command (the command goes after --)");
    char **command = argv + i;

    int out_fd = STDERR_FILENO;
    if (!output.empty()) {
        out_fd = open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out_fd < 0) {
            std::fprintf(stderr, "colmet-cputime: cannot create %s: %s\n", output.c_str(), std::strerror(errno));
            return 73;
        }
    }

    // The handlers are in place and the signals blocked before the fork, so
    // that none arrives between the fork and child_pid being set.
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig : forwarded)
        sigaddset(&block, sig);
    sigprocmask(SIG_BLOCK, &block, &old);
    // A signal that came in ignored (nohup, a background job of a script)
    // stays ignored, for the command too.
    struct sigaction sa {};
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    bool handled[sizeof forwarded / sizeof forwarded[0]] = {};
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; ++k) {
        struct sigaction was {};
        sigaction(forwarded[k], nullptr, &was);
        handled[k] = was.sa_handler != SIG_IGN;
        if (handled[k])
            sigaction(forwarded[k], &sa, nullptr);
    }

    // exec's errno comes back through a close-on-exec pipe: nothing read
    // means the exec happened.
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        std::perror("colmet-cputime: pipe");
        return 71;
    }
    pid_t pid = fork();
    if (pid < 0) {
        std::perror("colmet-cputime: fork");
        return 71;
    }
    if (pid == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; ++k)
            if (handled[k])
                sigaction(forwarded[k], &dfl, nullptr);
        sigprocmask(SIG_SETMASK, &old, nullptr);
        close(report[0]);
        execvp(command[0], command);
        int err = errno;
        ssize_t w = write(report[1], &err, sizeof err);
        (void)w;
        _exit(err == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    close(report[1]);
    sigprocmask(SIG_SETMASK, &old, nullptr);

    int exec_errno = 0;
    ssize_t n;
    do
        n = read(report[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == static_cast<ssize_t>(sizeof exec_errno))
        std::fprintf(stderr, "colmet-cputime: cannot run %s: %s\n", command[0], std::strerror(exec_errno));

    int status = 0;
    rusage child{};
    pid_t r;
    do
        r = wait4(pid, &status, 0, &child);
    while (r < 0 && errno == EINTR);
    child_pid = 0;
    if (r < 0) {
        std::perror("colmet-cputime: wait4");
        return 71;
    }
    int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    rusage self{};
    getrusage(RUSAGE_SELF, &self);
    double command_cpu = seconds(child.ru_utime) + seconds(child.ru_stime);
    double wrapper_cpu = seconds(self.ru_utime) + seconds(self.ru_stime);
    double user = seconds(child.ru_utime) + seconds(self.ru_utime);
    double sys = seconds(child.ru_stime) + seconds(self.ru_stime);
    char line[512];
    int len = std::snprintf(line, sizeof line,
                            "{\"cpu_seconds\": %.6f, \"user_seconds\": %.6f, \"system_seconds\": %.6f, "
                            "\"command_cpu_seconds\": %.6f, \"wrapper_cpu_seconds\": %.6f, \"exit_status\": %d}\n",
                            user + sys, user, sys, command_cpu, wrapper_cpu, exit_status);
    ssize_t w;
    do
        w = write(out_fd, line, static_cast<size_t>(len));
    while (w < 0 && errno == EINTR);
    if (w != len || (out_fd != STDERR_FILENO && close(out_fd) != 0)) {
        std::fprintf(stderr, "colmet-cputime: cannot write the result%s%s\n", output.empty() ? "" : " to ",
                     output.c_str());
        return 74;
    }
    return exit_status;
}
