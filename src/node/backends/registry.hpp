// The per-job backends colmet-node can run, in the order it builds them.
// An explicit table (registry.cpp), no static self-registration.
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace colmet::node {

struct BackendFactory {
    std::string_view name;         // as on the wire ("cgroup_cpu")
    std::string_view description;  // one line, for --list-backends and docs
    // Builds the backend for one job, or says why it cannot work for it.
    Result<std::unique_ptr<MetricBackend>> (*make)(const JobContext &);
};

// cgroup_cpu, cgroup_memory, cgroup_io, processes.
const std::vector<BackendFactory> &job_backends();

// The factory of that name, or nullptr.
const BackendFactory *find_backend(std::string_view name);

} // namespace colmet::node
