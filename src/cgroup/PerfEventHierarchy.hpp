// The perf_event cgroup a job's counters attach to.
//
// perf_event_open(2) in cgroup mode (PERF_FLAG_PID_CGROUP) takes a directory
// fd of the perf_event controller's hierarchy. On cgroup v2 that controller is
// implicit: every directory of the unified tree works, nothing to mount. On
// cgroup v1 the controller needs its own hierarchy, which many distributions
// (Debian 12 in hybrid mode included) leave unmounted; the job's processes
// must then also be moved into a directory of that hierarchy.
//
// Kernel behaviour to know: a v1 controller that is not mounted is bound to
// the cgroup2 tree (hybrid layouts: <root>/unified). Mounting it on v1 moves it
// off the unified tree, so perf_event on cgroup2 directories stops working
// there. We leave the hierarchy mounted for good (other jobs use it).
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"

#include <sys/types.h>

#include <filesystem>
#include <span>
#include <string_view>

namespace colmet::cgroup {

// The root of the perf_event hierarchy under `cgroup_root`:
//  - v2 (<root>/cgroup.controllers exists): the root itself;
//  - v1: <root>/perf_event when it is a mounted hierarchy (also a co-mount
//    such as <root>/net_cls,perf_event); otherwise mkdir <root>/perf_event and
//    mount -t cgroup -o perf_event there (needs CAP_SYS_ADMIN). Serialised
//    between colmet processes with flock() on <root>.
Result<std::filesystem::path> ensure_perf_event_hierarchy(const std::filesystem::path &cgroup_root);

// mkdir -p <perf_root>/<relative> (relative like "/oar/alice_42"); returns the
// directory. Refuses an empty relative path and ".." components.
Result<std::filesystem::path> ensure_job_perf_cgroup(const std::filesystem::path &perf_root, std::string_view relative);

// Write each pid to <perf_dir>/cgroup.procs (moves its whole thread group).
// Processes that exited meanwhile (ESRCH) are skipped.
Result<void> move_procs_into(const std::filesystem::path &perf_dir, std::span<const pid_t> pids);

// Move the job's running processes into its perf_event directory: those in
// each of its other v1 hierarchy directories (a process may be in some and
// not in others), looked at again until a round finds none missing
// (processes fork meanwhile), 4 rounds at most. Returns how many were
// moved. A job without v1 directories has nothing to move (on v2 the
// counters take the job's own directory).
Result<size_t> move_job_procs(const CgroupPaths &paths, const std::filesystem::path &perf_dir);

// Remove <perf_root>/<relative> (the leaf only; parents are shared). Processes
// still in it are moved back to <perf_root> first; a missing directory is
// fine. Retries EBUSY (exiting tasks) for up to timeout_ms.
Result<void> remove_job_perf_cgroup(const std::filesystem::path &perf_root, std::string_view relative,
                                    int timeout_ms = 2000);

}  // namespace colmet::cgroup
