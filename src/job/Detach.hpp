// Starting a daemon that outlives its starter and the job: what a scheduler
// hook needs to launch colmet-node.
#pragma once

#include "common/result.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace colmet::job {

// Start argv[0] (a path) fully detached and return its pid:
//  - double fork and setsid(): no controlling terminal, not our child, so
//    the caller (OAR's JRM, Slurm's prolog) never waits for it;
//  - moved into the root cgroup of every hierarchy under cgroup_root, so a
//    scheduler that kills everything in the job's cgroups does not kill it
//    and its own CPU time is not counted in the job (needs root; failures are
//    ignored: a non-root caller's process stays where it is);
//  - stdin, stdout and stderr on /dev/null, every other fd closed, cwd "/",
//    signal dispositions reset; SIGTERM and SIGINT stay blocked across exec
//    (colmet-node reads them from a signalfd, so one sent during its start-up
//    is not lost).
// Fails when fork or exec fails (the exec errno is reported).
Result<pid_t> spawn_detached(const std::vector<std::string> &argv, const std::filesystem::path &cgroup_root);

// The "cgroup.procs" files of the hierarchy roots under cgroup_root: the root
// itself on cgroup v2, every mounted v1 hierarchy (and the unified tree of a
// hybrid layout) otherwise.
std::vector<std::filesystem::path> root_cgroup_procs_files(const std::filesystem::path &cgroup_root);

}  // namespace colmet::job
