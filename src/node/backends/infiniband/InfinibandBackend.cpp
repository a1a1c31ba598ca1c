#include "node/backends/infiniband/InfinibandBackend.hpp"
#include "common/file_io.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/sysfs_names.hpp"

#include <array>
#include <limits>
#include <system_error>

namespace colmet::node::backends::infiniband {
namespace {

struct CounterKind {
    const char *file;    // kernel name
    const char *metric;  // colmet name
    bool data;           // counts words of 4 (or 8) bytes
};

constexpr std::array<CounterKind, 4> k_counters = {{
    {"port_xmit_data", "xmit_bytes", true},
    {"port_rcv_data", "rcv_bytes", true},
    {"port_xmit_packets", "xmit_packets", false},
    {"port_rcv_packets", "rcv_packets", false},
}};

// The best file for one counter: 64-bit extended first.
std::filesystem::path counter_file(const std::filesystem::path &port, const std::string &name)
{
    for (auto candidate : {port / "counters_ext" / (name + "_64"), port / "counters" / (name + "_64")})
        if (path_exists(candidate))
            return candidate;
    return port / "counters" / name;
}

}  // namespace

std::vector<PortCounter> find_port_counters(const std::filesystem::path &sysfs_root)
{
    std::vector<PortCounter> out;
    const auto root = sysfs_root / "class/infiniband";
    for (const auto &dev : subdirectories(root)) {
        // Omni-Path's hfi1 reports data in 8-byte flits; InfiniBand in 4-byte words.
        const double word = dev.starts_with("hfi1") ? 8.0 : 4.0;
        for (const auto &port : numbered_entries(root / dev / "ports", "")) {
            const auto dir = root / dev / "ports" / port.name;
            if (!path_exists(dir / "counters") && !path_exists(dir / "counters_ext"))
                continue;
            for (const auto &c : k_counters)
                out.push_back({dev + "." + port.name + "." + c.metric, counter_file(dir, c.file), c.data ? word : 1.0});
        }
    }
    return out;
}

InfinibandBackend::InfinibandBackend(std::vector<PortCounter> counters) : m_counters(std::move(counters))
{
    for (const auto &c : m_counters) {
        bool bytes = c.metric.ends_with("_bytes");
        m_metrics.push_back({c.metric, bytes ? "B" : "1", wire::MetricKind::counter});
        m_files.emplace_back(c.file);
    }
}

void InfinibandBackend::sample(std::span<double> values) noexcept
{
    m_problems.clear();
    for (size_t i = 0; i < m_files.size() && i < values.size(); ++i) {
        auto raw = m_files[i].read_u64();
        if (raw) {
            values[i] = static_cast<double>(*raw) * m_counters[i].scale;
        } else {
            values[i] = std::numeric_limits<double>::quiet_NaN();
            m_problems.item(m_counters[i].metric).add(": ").add(errno_text(m_files[i].error()));
        }
    }
    set_status(m_problems.view());
}

Result<std::unique_ptr<MetricBackend>> make_infiniband_backend(const NodeContext &ctx)
{
    auto counters = find_port_counters(ctx.sysfs_root);
    if (counters.empty())
        return Error(Errc::not_found,
                     "no InfiniBand port counters in " + (ctx.sysfs_root / "class/infiniband").string());
    return std::unique_ptr<MetricBackend>(std::make_unique<InfinibandBackend>(std::move(counters)));
}

}  // namespace colmet::node::backends::infiniband

namespace colmet::node::backends {

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_infiniband_factory;
constexpr BackendFactory k_infiniband_factory =
    node_backend_factory(*spec::backend_info("infiniband"), &infiniband::make_infiniband_backend);

}  // namespace colmet::node::backends
