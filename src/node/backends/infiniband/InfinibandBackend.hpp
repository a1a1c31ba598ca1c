// Backend "infiniband" (scope node): the port counters of every InfiniBand
// or Omni-Path adapter, from <sysfs>/class/infiniband/<dev>/ports/<port>/.
//
// Metrics per port, named "<dev>.<port>.<what>" ("mlx5_0.1.xmit_bytes"):
//   xmit_bytes, rcv_bytes      B, counter  (port_xmit_data, port_rcv_data)
//   xmit_packets, rcv_packets  1, counter  (port_xmit_packets, port_rcv_packets)
// The 64-bit extended counters are used where the kernel has them
// (counters_ext/<name>_64 of older drivers, counters/<name>_64, else
// counters/<name>, which is 64-bit on current drivers). The data counters
// count 4-byte words and are multiplied by 4; Omni-Path adapters (hfi1)
// count 8-byte flits and are multiplied by 8, as the original's --omnipath
// did. Cumulative since the port's counters were last reset.
#pragma once

#include "common/result.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "node/backends/support/NumberFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::backends::infiniband {

struct PortCounter {
    std::string metric;          // "mlx5_0.1.xmit_bytes"
    std::filesystem::path file;  // the counter file chosen
    double scale = 1;            // bytes per unit of the file
};

// Every port's four counters, devices and ports in name order.
std::vector<PortCounter> find_port_counters(const std::filesystem::path &sysfs_root);

class InfinibandBackend final : public MetricBackend {
public:
    explicit InfinibandBackend(std::vector<PortCounter> counters);

    std::string_view name() const override { return "infiniband"; }
    wire::Scope scope() const override { return wire::Scope::node; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override;

private:
    std::vector<PortCounter> m_counters;
    std::vector<wire::MetricDescriptor> m_metrics;
    std::vector<NumberFile> m_files;
    StatusText m_problems;
};

// Fails with Errc::not_found when the node has no InfiniBand port.
Result<std::unique_ptr<MetricBackend>> make_infiniband_backend(const NodeContext &ctx);

}  // namespace colmet::node::backends::infiniband
