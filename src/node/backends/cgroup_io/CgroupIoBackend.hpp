// Backend "cgroup_io": the job's block I/O summed over devices.
//   v1: blkio.throttle.io_service_bytes_recursive and
//       blkio.throttle.io_serviced_recursive (or the non-recursive files).
//   v2: io.stat.
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <memory>
#include <vector>

namespace colmet::node::backends {

// read_bytes, write_bytes [B, counter]; read_ops, write_ops ["1", counter].
const std::vector<wire::MetricDescriptor> &cgroup_io_metrics();

// Fails when the blkio controller is not mounted (v1), the io controller is
// not enabled (v2) or the job's directory does not exist.
Result<std::unique_ptr<MetricBackend>> make_cgroup_io_backend(const JobContext &ctx);

}  // namespace colmet::node::backends
