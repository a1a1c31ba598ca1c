// Starting and stopping the helper processes colmet-job runs.
#pragma once

#include "common/exec_argv.hpp"
#include "common/result.hpp"

#include <csignal>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace colmet::job {

struct SpawnOptions {
    bool new_session = false;        // setsid(): out of the terminal's reach (Ctrl-C)
    bool keep_term_blocked = false;  // exec with SIGTERM/SIGINT blocked (a program that reads them
                                     // from a signalfd sees one sent during its start-up)
    std::string stdout_path;         // empty: inherit
    std::string stderr_path;         // empty: inherit
};

// SIGTERM and SIGINT: what a spawned colmet program reads from a signalfd,
// kept blocked around fork() and across exec().
sigset_t term_signals();

// Who a command runs as when colmet-job drops root: sudo's invoking user,
// resolved in the parent (the child only makes system calls).
struct Credentials {
    std::string user;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;     // the user's supplementary groups (getgrouplist)
    std::vector<std::string> env;  // the environment to exec with ("NAME=value")
};

// Under sudo (root, SUDO_USER set to another user): that user's credentials
// and the environment sudo gives a command it runs as a user: the current
// one (which sudo already reset) with HOME, USER, LOGNAME, SHELL and MAIL of
// the user. nullopt when not run by sudo for another user; an error when
// SUDO_USER names no user here.
Result<std::optional<Credentials>> sudo_invoker();

// In a forked child: become `c` (supplementary groups, group, user; the
// saved IDs too, so root cannot be regained). Async-signal-safe. 0, or the
// errno of the step that failed.
int become(const Credentials &c);

// fork + exec argv[0] (a path) with the given arguments. Every fd but 0, 1
// and 2 is closed in the child.
Result<pid_t> spawn(const std::vector<std::string> &argv, const SpawnOptions &options = {});

// Wait for pid to exit, at most timeout_ms (-1: forever). Returns the raw
// wait status, or nullopt when the timeout expired.
std::optional<int> wait_for(pid_t pid, int timeout_ms);

// SIGTERM, wait up to grace_ms, then SIGKILL and reap. Returns the wait status.
int terminate(pid_t pid, int grace_ms);

// The conventional shell exit code of a wait status: the exit code, or
// 128 + signal number.
int exit_code_of(int wait_status);

// Path of a sibling program: the directory of this executable first, then
// the install locations, then $PATH. Empty when not found.
std::filesystem::path find_program(const std::string &name);

}  // namespace colmet::job
