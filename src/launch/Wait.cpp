#include "launch/Wait.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>

namespace colmet::launch {

Exit wait_exit(pid_t pid, int timeout_ms)
{
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    auto pause = std::chrono::milliseconds(1);
    Exit out;
    for (;;) {
        int status = 0;
        const pid_t w = ::waitpid(pid, &status, timeout_ms < 0 && !out.status_unknown ? 0 : WNOHANG);
        if (w == pid) {
            out.status = status;
            return out;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            // Not (or no longer) our child to wait for: watch the pid go.
            out.status_unknown = true;
            if (::kill(pid, 0) != 0 && errno == ESRCH)
                return out;
        }
        if (timeout_ms >= 0 && clock::now() >= deadline) {
            out.timed_out = true;
            return out;
        }
        std::this_thread::sleep_for(pause);
        if (pause < std::chrono::milliseconds(50))
            pause *= 2;
    }
}

std::optional<int> wait_for(pid_t pid, int timeout_ms)
{
    const Exit e = wait_exit(pid, timeout_ms);
    if (e.timed_out)
        return std::nullopt;
    return e.status;
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

}  // namespace colmet::launch
