// What colmet-node keeps of root once it has started. Start-up needs root
// (mounting the perf_event hierarchy, making and chowning the control
// socket, reading the key files); sampling a job afterwards needs only:
//   - CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8): perf_event_open in
//     cgroup mode on every CPU, when the counters are opened again later
//     (colmet-ctl's event changes and resume, a job directory found after
//     the start) or the RAPL backend reads the perf power PMU;
//   - CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE: /proc/<pid>/io of the job's
//     processes, which belong to another user (the processes backend): the
//     file is mode 0400, its process's user's, and reading it also takes
//     ptrace read access to that process.
// The sampler stays uid 0, so it still reads and writes the root-owned
// files it uses as their owner (cgroup files, RAPL's energy_uj, the node
// spool) with no capability for that. Every other capability goes from the
// effective, permitted and inheritable sets and from the bounding set (so a
// program it starts, colmet-job flush-spool, gets no more), and no new
// privilege can be gained (PR_SET_NO_NEW_PRIVS: no setuid program).
#pragma once

#include "common/result.hpp"

#include <string>
#include <vector>

namespace colmet::node {

struct PrivilegeNeeds {
    bool perf = false;        // perf_event_open later on (perfhw, RAPL through perf)
    bool other_proc = false;  // other users' /proc/<pid>/io (the processes backend)
};

// Drop to what `needs` asks for. Returns the names of the capabilities
// kept (empty: none), or an error naming the step that failed. A process
// without any capability (not root) has nothing to drop: ok, nothing kept.
Result<std::vector<std::string>> drop_privileges(const PrivilegeNeeds &needs);

}  // namespace colmet::node
