// Starting the node-level backends colmet-node was asked for (--enable-RAPL,
// --enable-temperature, --enable-infiniband, --enable-lustre) and writing
// their mapping files.
#pragma once

#include "node/MetricBackend.hpp"
#include "node/backends/registry.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node {

struct NodeBackendRequest {
    NodeContext ctx;
    std::vector<std::string> enabled;     // backend names (node_backends()), any order
    std::string rapl_mapping_dir;         // RAPL_mapping.<time>.csv goes there (empty: none)
    std::string temperature_mapping_dir;  // temperature_mapping.<time>.csv goes there (empty: none)
};

// Build the enabled backends in table order. A backend this node cannot
// have costs exactly one log line, "backend <name> not available: <reason>"
// (warning), and is left out: no metrics, no data columns (so is one with
// more metrics than a message may carry, wire::k_max_metrics_per_backend,
// e.g. thousands of sensors or mounts). A backend that runs with problems
// (e.g. RAPL energy_uj readable by root only) logs one warning
// "<name>: <problem>". Mapping files are written at `now_ns`; a failure to
// write one is a warning.
std::vector<std::unique_ptr<MetricBackend>> make_node_backends(const NodeBackendRequest &request, int64_t now_ns);

}  // namespace colmet::node
