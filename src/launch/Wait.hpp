// Waiting for a launched child, and stopping it.
#pragma once

#include <sys/types.h>

#include <optional>

namespace colmet::launch {

struct Exit {
    int status = 0;               // the raw wait status (when known)
    bool timed_out = false;       // still running when the time was up
    bool status_unknown = false;  // reaped by someone else (a host program that reaps its
                                  // children, or SIGCHLD ignored): it ended, its status is lost
};

// Wait for pid to end, at most timeout_ms (-1: without limit).
Exit wait_exit(pid_t pid, int timeout_ms);

// The raw wait status, or nullopt when the time was up (an unknown status
// reads as 0: ended).
std::optional<int> wait_for(pid_t pid, int timeout_ms);

// SIGTERM, wait up to grace_ms, then SIGKILL and reap. The wait status.
int terminate(pid_t pid, int grace_ms);

// The conventional shell exit code of a wait status: the exit code, or 128
// plus the signal's number.
int exit_code_of(int wait_status);

}  // namespace colmet::launch
