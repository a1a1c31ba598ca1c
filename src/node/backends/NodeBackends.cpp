#include "node/backends/NodeBackends.hpp"

#include "common/log.hpp"
#include "node/backends/rapl/RaplBackend.hpp"
#include "node/backends/rapl/RaplMapping.hpp"
#include "node/backends/support/MappingCsv.hpp"
#include "node/backends/temperature/TemperatureBackend.hpp"

#include <algorithm>

namespace colmet::node {
namespace {

void write_mapping(const std::string &dir, std::string_view prefix, int64_t now_ns, const std::string &csv)
{
    if (dir.empty())
        return;
    auto file = backends::write_mapping_file(dir, prefix, now_ns, csv);
    if (file)
        spdlog::info("{} written to {}", prefix, file->string());
    else
        spdlog::warn("{} file: {}", prefix, file.error().message());
}

}  // namespace

std::vector<std::unique_ptr<MetricBackend>> make_node_backends(const NodeBackendRequest &request, int64_t now_ns)
{
    std::vector<std::unique_ptr<MetricBackend>> out;
    for (const auto &factory : node_backends()) {
        if (std::find(request.enabled.begin(), request.enabled.end(), factory.name) == request.enabled.end())
            continue;
        auto backend = factory.make(request.ctx);
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
        if (auto *rapl = dynamic_cast<backends::rapl::RaplBackend *>(backend->get())) {
            if (!rapl->open_problems().empty())
                spdlog::warn("rapl: {}", rapl->open_problems());
            write_mapping(request.rapl_mapping_dir, "RAPL_mapping", now_ns,
                          backends::rapl::rapl_mapping_csv(rapl->domains()));
        }
        if (factory.name == "temperature")
            write_mapping(request.temperature_mapping_dir, "temperature_mapping", now_ns,
                          backends::temperature::temperature_mapping_csv((*backend)->metrics()));
        out.push_back(std::move(*backend));
    }
    return out;
}

}  // namespace colmet::node
