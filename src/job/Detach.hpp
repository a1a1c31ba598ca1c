// Starting a daemon that outlives its starter and the job: what a scheduler
// hook needs to launch colmet-node, and colmet-job its spool flush.
#pragma once

#include "common/result.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace colmet::job {

// Start argv[0] (a path) as a daemon (launch/Launch.hpp) and return its pid:
//  - detached in a session of its own: no controlling terminal, not our
//    child, so the caller (OAR's JRM, Slurm's prolog) never waits for it;
//  - moved into the root cgroup of every hierarchy under cgroup_root, so a
//    scheduler that kills everything in the job's cgroups does not kill it
//    and its own CPU time is not counted in the job (needs root; failures are
//    ignored: a non-root caller's process stays where it is);
//  - stdin, stdout and stderr on /dev/null, every other fd closed, cwd "/",
//    umask 022, signal dispositions reset; SIGTERM and SIGINT stay blocked
//    across exec (colmet-node reads them from a signalfd, so one sent during
//    its start-up is not lost).
// Fails when fork or exec fails (the exec errno is reported).
Result<pid_t> spawn_detached(const std::vector<std::string> &argv, const std::filesystem::path &cgroup_root);

}  // namespace colmet::job
