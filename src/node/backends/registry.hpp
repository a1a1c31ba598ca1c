// The factories of the backends colmet-node can run, in the order it builds
// them: an explicit table (registry.cpp), no static self-registration. Names,
// flags and descriptions come from the catalog (catalog.hpp).
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "node/backends/catalog.hpp"

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

// A node-level backend: measures the whole node, not one job's cgroup, and
// runs only when its --enable-* option is given.
struct NodeBackendFactory {
    std::string_view name;         // as on the wire ("rapl")
    std::string_view option;       // the colmet-node flag that enables it ("--enable-RAPL")
    std::string_view description;  // one line, for --list-backends and docs
    // Builds the backend, or says why this node cannot have it
    // (Errc::not_found when the device or file system is absent).
    Result<std::unique_ptr<MetricBackend>> (*make)(const NodeContext &);
};

// rapl, temperature, infiniband, lustre.
const std::vector<NodeBackendFactory> &node_backends();

// The node-level factory of that name, or nullptr.
const NodeBackendFactory *find_node_backend(std::string_view name);

}  // namespace colmet::node
