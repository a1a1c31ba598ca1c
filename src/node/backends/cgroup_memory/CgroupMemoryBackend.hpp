// Backend "cgroup_memory": the job's memory use in bytes.
//   v1: memory.usage_in_bytes, memory.max_usage_in_bytes, memory.stat
//       (total_rss, total_cache, total_pgmajfault).
//   v2: memory.current, memory.peak (kernel >= 5.19), memory.stat
//       (anon, file, pgmajfault).
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <memory>
#include <vector>

namespace colmet::node::backends {

// current, peak, anon, file [B, gauge]; major_faults ["1", counter].
const std::vector<wire::MetricDescriptor> &cgroup_memory_metrics();

// Fails when the memory controller is not mounted (v1) or not enabled (v2)
// for the job, or the job's directory does not exist.
Result<std::unique_ptr<MetricBackend>> make_cgroup_memory_backend(const JobContext &ctx);

}  // namespace colmet::node::backends
