// Backend "rapl" (scope node): the energy of each CPU package and RAPL
// domain, from powercap or, when powercap is absent, the perf power PMU
// (see RaplDomains.hpp).
//
// Metrics: one per domain, named "<package>_<domain>" ("package_0_package",
// "package_0_core", "package_1_dram") or "psys"; unit "J", kind counter:
// the energy used since colmet-node started, in joules.
//  - powercap: energy_uj is read when the backend is built (the baseline)
//    and at every sample; a value below the previous one is a wrap-around of
//    the hardware counter and max_energy_range_uj is added (one wrap per
//    period at most can be seen: about 262 kJ, over 20 minutes even at 200 W
//    per package). energy_uj is readable by root only since Linux 5.10: then
//    the values are NaN (never 0) and the status says "permission: ...".
//  - perf: count * scale since the events were opened (64-bit, the kernel
//    handles the wrap), system-wide on one CPU per package.
#pragma once

#include "common/result.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "node/backends/rapl/RaplDomains.hpp"
#include "node/backends/support/NumberFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::backends::rapl {

// How the backend reaches the kernel; tests replace these to inject errors
// (EACCES, which root never sees) and fake perf counters.
struct RaplIo {
    OpenFileFn open_file = nullptr;  // energy_uj (default: open_read)
    // perf_event_open of one system-wide event on `cpu`: an fd, or -errno.
    int (*perf_open)(uint32_t type, uint64_t config, int cpu) = nullptr;
    // Read one perf count; false (errno set) on failure.
    bool (*perf_read)(int fd, uint64_t &count) = nullptr;
};

class RaplBackend final : public MetricBackend {
public:
    RaplBackend(Source source, std::vector<RaplDomain> domains, const RaplIo &io);

    std::string_view name() const override { return "rapl"; }
    bool node_energy() const override { return true; }
    wire::Scope scope() const override { return wire::Scope::node; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override;

    Source source() const { return m_source; }
    const std::vector<RaplDomain> &domains() const { return m_domains; }
    // Domains that could not be opened: "permission: ..." or "<metric>: <reason>"; empty when all opened.
    const std::string &open_problems() const { return m_open_problems; }
    // Domains whose counter opened (perf) or whose energy_uj opened (powercap).
    size_t opened() const;

private:
    struct Channel {
        NumberFile file;     // powercap energy_uj
        UniqueFd perf;       // perf event
        int open_errno = 0;  // perf: why it did not open
        bool have_prev = false;
        uint64_t prev_uj = 0;
        uint64_t total_uj = 0;
    };
    void sample_powercap(size_t i, double &value, size_t &denied) noexcept;
    void sample_perf(size_t i, double &value) noexcept;

    Source m_source;
    std::vector<RaplDomain> m_domains;
    std::vector<wire::MetricDescriptor> m_metrics;
    std::vector<Channel> m_channels;
    RaplIo m_io;
    std::string m_open_problems;
    StatusText m_problems;
};

// Powercap when it has RAPL zones, else the perf power PMU. Fails with
// Errc::not_found when the node has neither, and when no perf event could
// be opened. A powercap tree whose energy_uj cannot be read still makes a
// backend (NaN values, "permission" status).
Result<std::unique_ptr<RaplBackend>> make_rapl(const std::filesystem::path &sysfs_root, const RaplIo &io = {});

// The registry's factory: make_rapl(ctx.sysfs_root).
Result<std::unique_ptr<MetricBackend>> make_rapl_backend(const NodeContext &ctx);

}  // namespace colmet::node::backends::rapl
