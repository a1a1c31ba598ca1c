#include "node/backends/NodeBackends.hpp"

#include "common/log.hpp"
#include "wire/rules.hpp"

#include <algorithm>

namespace colmet::node {

std::vector<std::unique_ptr<MetricBackend>> make_node_backends(const NodeBackendRequest &request, int64_t now_ns)
{
    std::vector<std::unique_ptr<MetricBackend>> out;
    for (const auto &name : request.enabled)
        if (const spec::BackendInfo *b = spec::backend_info(name);
            b && b->kind == spec::BackendKind::node && !find_node_backend(name))
            spdlog::warn("backend {} not available: this colmet-node was built without it", name);
    for (const auto &factory : node_backends()) {
        if (std::find(request.enabled.begin(), request.enabled.end(), factory.name) == request.enabled.end())
            continue;
        auto backend = factory.make_for_node(request.ctx);
        if (!backend) {
            spdlog::warn("backend {} not available: {}", factory.name, backend.error().message());
            continue;
        }
        if (size_t n = (*backend)->metrics().size(); n > wire::k_max_metrics_per_backend) {
            // More than one message may carry for a backend (every message would be refused).
            spdlog::warn("backend {} not available: {} metrics, more than the protocol's {} per backend", factory.name,
                         n, wire::k_max_metrics_per_backend);
            continue;
        }
        spdlog::info("backend {}: {} metrics (node scope)", factory.name, (*backend)->metrics().size());
        if (factory.after_start) {
            auto dir = request.mapping_dirs.find(std::string(factory.name));
            factory.after_start(**backend, dir == request.mapping_dirs.end() ? std::string() : dir->second, now_ns);
        }
        out.push_back(std::move(*backend));
    }
    return out;
}

}  // namespace colmet::node
