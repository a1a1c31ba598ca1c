// Backend "processes": the job's processes and threads, and their I/O from
// /proc/<pid>/io made cumulative over the job (see ProcessTracker).
//
// Pids come from cgroup.procs of the job's cgroup and its descendants (v1:
// the first mounted of pids, cpuacct, memory, cpu, blkio, cpuset; v2: the
// unified directory). /proc/<pid>/stat and /proc/<pid>/io are opened, read
// and closed at each sample through a kept fd of the proc root (openat), so
// the number of open fds does not grow with the job. Steady state does not
// allocate; a sample with more live processes than ever before grows the
// tracking vectors once.
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <memory>
#include <vector>

namespace colmet::node::backends {

// processes, threads ["1", gauge]; read_chars, write_chars [B, counter];
// read_syscalls, write_syscalls ["1", counter]; read_bytes, write_bytes,
// cancelled_write_bytes [B, counter].
const std::vector<wire::MetricDescriptor> &processes_metrics();

// Fails when no hierarchy has the job's cgroup.procs or ctx.proc_root
// cannot be opened.
Result<std::unique_ptr<MetricBackend>> make_processes_backend(const JobContext &ctx);

}  // namespace colmet::node::backends
