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
