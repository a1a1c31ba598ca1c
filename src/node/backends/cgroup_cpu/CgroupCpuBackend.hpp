// Backend "cgroup_cpu": the job's CPU time and CFS throttling, in seconds.
//   v1: cpuacct.usage, cpuacct.usage_user/usage_sys (or cpuacct.stat ticks)
//       from the cpuacct controller; cpu.stat from the cpu controller.
//   v2: cpu.stat of the job's directory; its usage, user and system summed
//       over chosen leaves below it where the directory also holds work not
//       the job's own (JobContext::cpu_leaves, CpuLeaves.hpp).
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <memory>
#include <vector>

namespace colmet::node::backends {

// usage, user, system [s, counter]; nr_periods, nr_throttled ["1", counter];
// throttled_time [s, counter].
const std::vector<wire::MetricDescriptor> &cgroup_cpu_metrics();

// Fails when the job has no cpuacct directory (v1) or no readable cpu.stat (v2).
Result<std::unique_ptr<MetricBackend>> make_cgroup_cpu_backend(const JobContext &ctx);

}  // namespace colmet::node::backends
