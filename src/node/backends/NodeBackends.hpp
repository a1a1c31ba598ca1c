// Starting the node-level backends colmet-node was asked for (--enable-RAPL,
// --enable-temperature, --enable-infiniband, --enable-lustre) and writing
// their mapping files.
#pragma once

#include "node/MetricBackend.hpp"
#include "node/backends/registry.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node {

struct NodeBackendRequest {
    NodeContext ctx;
    std::vector<std::string> enabled;  // backend names (node_backends()), any order
    // Where a backend's mapping file goes, by backend name (absent or empty:
    // none): RAPL_mapping.<time>.csv, temperature_mapping.<time>.csv.
    std::map<std::string, std::string> mapping_dirs;
};

// Build the enabled backends in table order. A backend this node cannot
// have (or this build left out) costs exactly one log line, "backend <name>
// not available: <reason>" (warning), and is left out: no metrics, no data
// columns (so is one with more metrics than a message may carry,
// wire::k_max_metrics_per_backend, e.g. thousands of sensors or mounts).
// Then each backend's after_start step runs (BackendFactory.hpp): one that
// runs with problems (e.g. RAPL energy_uj readable by root only) logs one
// warning "<name>: <problem>"; mapping files are written at `now_ns`, and a
// failure to write one is a warning.
std::vector<std::unique_ptr<MetricBackend>> make_node_backends(const NodeBackendRequest &request, int64_t now_ns);

}  // namespace colmet::node
