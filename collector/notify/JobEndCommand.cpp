#include "collector/notify/JobEndCommand.hpp"

#include "launch/Launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

extern char **environ;

namespace colmet::collector::notify {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t k_output_kept = 2048;  // of each command's output, for the log

struct Running {
    EndedJob job;
    pid_t pid = -1;
    int pidfd = -1;
    int input = -1;   // its standard input, until the JSON is written
    int output = -1;  // its standard output and error
    size_t written = 0;
    std::string output_text;
    Clock::time_point deadline;
    bool killed = false;
};

void close_fd(int &fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

// The last line of a command's output, made printable, for the log.
std::string output_tail(const std::string &text)
{
    std::string out = text;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
        out.pop_back();
    if (out.size() > 300)
        out = "..." + out.substr(out.size() - 300);
    for (char &c : out)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
            c = c == '\n' ? '|' : '?';
    return out;
}

// One poll round of a running command: its input written as far as it
// takes it (a command that does not read it gets EPIPE, whose SIGPIPE is
// taken back here), its output read (the last k_output_kept bytes kept),
// and killed with its group once past its deadline.
void exchange(Running &r, const sigset_t &pipe_signal, Clock::time_point now)
{
    const timespec no_wait{0, 0};
    if (r.input >= 0) {
        const ssize_t n = ::write(r.input, r.job.json.data() + r.written, r.job.json.size() - r.written);
        if (n > 0)
            r.written += static_cast<size_t>(n);
        if (n < 0 && errno == EPIPE)
            (void)sigtimedwait(&pipe_signal, nullptr, &no_wait);
        if (r.written == r.job.json.size() || (n < 0 && errno != EAGAIN && errno != EINTR))
            close_fd(r.input);  // all written, or the command does not read it (EPIPE)
    }
    if (r.output >= 0) {
        char buf[4096];
        ssize_t n;
        while ((n = ::read(r.output, buf, sizeof buf)) > 0) {
            r.output_text.append(buf, static_cast<size_t>(n));
            if (r.output_text.size() > 2 * k_output_kept)
                r.output_text.erase(0, r.output_text.size() - k_output_kept);
        }
        if (n == 0)
            close_fd(r.output);
    }
    if (!r.killed && now >= r.deadline) {
        ::kill(-r.pid, SIGKILL);
        ::kill(r.pid, SIGKILL);
        r.killed = true;
    }
}

// The log line of an ended command (its wait status), with the end of what
// it printed.
void log_outcome(const Running &r, int status, bool ok, double timeout_s)
{
    const std::string tail = output_tail(r.output_text);
    const char *sep = tail.empty() ? "" : ": ";
    if (ok)
        spdlog::info("on-job-end: job {}: done{}{}", r.job.job_id, sep, tail);
    else if (r.killed)
        spdlog::warn("on-job-end: job {}: killed after {} s{}{}", r.job.job_id, timeout_s, sep, tail);
    else if (WIFEXITED(status))
        spdlog::warn("on-job-end: job {}: exit status {}{}{}", r.job.job_id, WEXITSTATUS(status), sep, tail);
    else
        spdlog::warn("on-job-end: job {}: killed by signal {}{}{}", r.job.job_id, WTERMSIG(status), sep, tail);
}

// Start `/bin/sh -c command` with the job's environment; the pipes' other
// ends in `r`. false with errno's text in `why`.
bool spawn(const JobEndOptions &o, Running &r, std::string &why)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
        why = std::string("pipe: ") + std::strerror(errno);
        for (int fd : {in[0], in[1], out[0], out[1]})
            if (fd >= 0)
                ::close(fd);
        return false;
    }
    launch::LaunchSpec spec;
    spec.argv = {"/bin/sh", "-c", o.command};
    spec.env.emplace();
    for (char **e = environ; e && *e; ++e)
        if (std::strncmp(*e, "COLMET_JOB_", 11) != 0)
            spec.env->emplace_back(*e);
    spec.env->push_back("COLMET_JOB_ID=" + r.job.job_id);
    spec.env->push_back("COLMET_JOB_USER=" + r.job.user);
    spec.env->push_back("COLMET_JOB_FILE=" + r.job.file);
    spec.in = launch::Stdio::from_fd(in[0]);
    spec.out = spec.err = launch::Stdio::from_fd(out[1]);
    spec.session = launch::Session::own_group;  // killed with its group past its deadline
    auto pid = launch::launch(spec);
    ::close(in[0]);
    ::close(out[1]);
    if (!pid) {
        why = pid.error().message();
        ::close(in[1]);
        ::close(out[0]);
        return false;
    }
    r.pid = *pid;
    r.input = in[1];
    r.output = out[0];
    ::fcntl(r.input, F_SETFL, O_NONBLOCK);
    ::fcntl(r.output, F_SETFL, O_NONBLOCK);
    r.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, r.pid, 0));
    return true;
}

}  // namespace

JobEndCommand::JobEndCommand(JobEndOptions options) : m_options(std::move(options))
{
    m_options.max_running = std::max<size_t>(m_options.max_running, 1);
    m_wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_wake < 0)
        throw std::runtime_error(std::string("on-job-end: eventfd: ") + std::strerror(errno));
    m_thread = std::thread([this] { run(); });
}

JobEndCommand::~JobEndCommand()
{
    stop();
    ::close(m_wake);
}

void JobEndCommand::submit(EndedJob job)
{
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping || m_queue.size() >= m_options.max_queued) {
            ++m_stats.dropped;
            spdlog::warn("on-job-end: job {}: not run, {}", job.job_id,
                         m_stopping ? "the collector is stopping" : "the queue is full");
            return;
        }
        m_queue.push_back(std::move(job));
    }
    const uint64_t one = 1;
    (void)!::write(m_wake, &one, sizeof one);
}

void JobEndCommand::stop()
{
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping && !m_thread.joinable())
            return;
        m_stopping = true;
    }
    const uint64_t one = 1;
    (void)!::write(m_wake, &one, sizeof one);
    if (m_thread.joinable())
        m_thread.join();
}

JobEndStats JobEndCommand::stats() const
{
    std::lock_guard lock(m_mutex);
    return m_stats;
}

std::string JobEndCommand::stats_text() const
{
    const JobEndStats s = stats();
    return "on-job-end: " + std::to_string(s.started) + " run, " + std::to_string(s.succeeded) + " succeeded, " +
           std::to_string(s.failed) + " failed (" + std::to_string(s.timed_out) + " timed out), " +
           std::to_string(s.dropped) + " dropped";
}

void JobEndCommand::run()
{
    // A command that does not read its input makes the write fail with
    // EPIPE: the SIGPIPE that comes with it is blocked in this thread and
    // taken back, whatever the process does with SIGPIPE.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    std::vector<Running> running;
    const auto timeout =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(m_options.timeout_s));
    for (;;) {
        // Start what may start; at stop, drop what waits.
        for (;;) {
            EndedJob next;
            {
                std::lock_guard lock(m_mutex);
                if (m_stopping && !m_queue.empty()) {
                    m_stats.dropped += m_queue.size();
                    std::string ids;
                    for (const auto &j : m_queue)
                        ids += (ids.empty() ? "" : ", ") + j.job_id;
                    spdlog::warn("on-job-end: the collector stops: {} job(s) not run: {}", m_queue.size(), ids);
                    m_queue.clear();
                }
                if (m_queue.empty() || running.size() >= m_options.max_running)
                    break;
                next = std::move(m_queue.front());
                m_queue.pop_front();
                ++m_stats.started;
            }
            Running r;
            r.job = std::move(next);
            std::string why;
            if (!spawn(m_options, r, why)) {
                spdlog::error("on-job-end: job {}: {}", r.job.job_id, why);
                std::lock_guard lock(m_mutex);
                ++m_stats.failed;
                continue;
            }
            r.deadline = Clock::now() + timeout;
            running.push_back(std::move(r));
        }
        {
            std::lock_guard lock(m_mutex);
            if (m_stopping && running.empty())
                return;
        }

        // Wait for the wake-up, the children's pipes and ends, or a deadline.
        std::vector<pollfd> fds{{m_wake, POLLIN, 0}};
        auto wait_until = Clock::now() + std::chrono::seconds(1);
        for (const auto &r : running) {
            if (r.input >= 0)
                fds.push_back({r.input, POLLOUT, 0});
            if (r.output >= 0)
                fds.push_back({r.output, POLLIN, 0});
            if (r.pidfd >= 0)
                fds.push_back({r.pidfd, POLLIN, 0});
            wait_until = std::min(wait_until, r.deadline);
        }
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - Clock::now()).count();
        (void)::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(ms + 1, 0, 1000)));
        uint64_t drained = 0;
        (void)!::read(m_wake, &drained, sizeof drained);

        const auto now = Clock::now();
        for (auto &r : running)
            exchange(r, pipe_signal, now);
        // Reap the commands that ended (without a pidfd: every poll round).
        for (auto it = running.begin(); it != running.end();) {
            int status = 0;
            const pid_t done = ::waitpid(it->pid, &status, WNOHANG);
            if (done != it->pid) {
                ++it;
                continue;
            }
            if (it->killed)
                ::kill(-it->pid, SIGKILL);  // what the command left behind in its group
            const bool ok = !it->killed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
            {
                std::lock_guard lock(m_mutex);
                ++(ok ? m_stats.succeeded : m_stats.failed);
                if (it->killed)
                    ++m_stats.timed_out;
            }
            if (it->output >= 0) {  // what it wrote as it ended
                char buf[4096];
                ssize_t n;
                while ((n = ::read(it->output, buf, sizeof buf)) > 0 && it->output_text.size() < 2 * k_output_kept)
                    it->output_text.append(buf, static_cast<size_t>(n));
            }
            log_outcome(*it, status, ok, m_options.timeout_s);
            close_fd(it->input);
            close_fd(it->output);
            close_fd(it->pidfd);
            it = running.erase(it);
        }
    }
}

}  // namespace colmet::collector::notify
