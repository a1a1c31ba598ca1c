#include "node/backends/cgroup_cpu/CgroupCpuBackend.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/cgroup_cpu/CpuLeaves.hpp"
#include "node/backends/cgroup_cpu/cpu_parsers.hpp"
#include "node/backends/support/CgroupFileBackend.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/backend_util.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <unistd.h>

namespace colmet::node::backends {
namespace {

constexpr std::string_view k_name = "cgroup_cpu";
enum Index : size_t { k_usage, k_user, k_system, k_nr_periods, k_nr_throttled, k_throttled_time };
constexpr double k_ns = 1e-9;
constexpr double k_us = 1e-6;

// The files one job's backend reads, opened by the factory.
struct CpuFiles {
    bool v2 = false;
    KeptFile cpu_stat;                // v1: cpu controller; v2: the job's cpu.stat
    bool cpu_mounted = true;          // v1: the cpu controller exists for the job
    KeptFile usage;                   // v1 cpuacct.usage
    KeptFile usage_user;              // v1 cpuacct.usage_user (kernel >= 4.7)
    KeptFile usage_sys;               // v1 cpuacct.usage_sys
    bool split_usage = false;         // v1 usage_user and usage_sys opened
    KeptFile cpuacct_stat;            // v1 cpuacct.stat, when usage_user/usage_sys are absent
    double tick_s = 0.01;             // v1 seconds per USER_HZ tick
    std::optional<CpuLeaves> leaves;  // v2: the job's own work is in these leaves
};

class CgroupCpuBackend final : public VersionedCgroupBackend {
public:
    explicit CgroupCpuBackend(CpuFiles files) : VersionedCgroupBackend(files.v2), m_f(std::move(files)) {}

    std::string_view name() const override { return k_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return cgroup_cpu_metrics(); }

private:
    void sample_v1(std::span<double> values) noexcept override
    {
        if (auto ns = read_u64(m_f.usage, m_problems))
            values[k_usage] = static_cast<double>(*ns) * k_ns;
        if (m_f.split_usage) {
            if (auto ns = read_u64(m_f.usage_user, m_problems))
                values[k_user] = static_cast<double>(*ns) * k_ns;
            if (auto ns = read_u64(m_f.usage_sys, m_problems))
                values[k_system] = static_cast<double>(*ns) * k_ns;
        } else if (std::string_view text; m_f.cpuacct_stat.read(text, m_problems)) {
            if (auto st = parse_cpuacct_stat(text)) {
                store(values, k_user, st->user_ticks, m_f.tick_s, m_problems, "cpuacct.stat", "user");
                store(values, k_system, st->system_ticks, m_f.tick_s, m_problems, "cpuacct.stat", "system");
            } else {
                m_problems.item("cpuacct.stat: ").add(st.error().message());
            }
        }
        if (!m_f.cpu_mounted) {
            note_once("cpu.stat: no job directory in the cpu hierarchy");
        } else if (std::string_view text; m_f.cpu_stat.read(text, m_problems)) {
            if (auto st = parse_v1_cpu_stat(text)) {
                store(values, k_nr_periods, st->nr_periods, 1.0, m_problems, "cpu.stat", "nr_periods");
                store(values, k_nr_throttled, st->nr_throttled, 1.0, m_problems, "cpu.stat", "nr_throttled");
                store(values, k_throttled_time, st->throttled_time_ns, k_ns, m_problems, "cpu.stat", "throttled_time");
            } else {
                m_problems.item("cpu.stat: ").add(st.error().message());
            }
        }
    }

    void sample_v2(std::span<double> values) noexcept override
    {
        std::string_view text;
        if (!m_f.cpu_stat.read(text, m_problems))
            return;
        auto st = parse_v2_cpu_stat(text);
        if (!st) {
            m_problems.item("cpu.stat: ").add(st.error().message());
            return;
        }
        if (m_f.leaves) {
            // Throttling is the whole directory's (its limit applies to it all).
            const auto sum = m_f.leaves->read(m_problems);
            values[k_usage] = static_cast<double>(sum.usage_usec) * k_us;
            values[k_user] = static_cast<double>(sum.user_usec) * k_us;
            values[k_system] = static_cast<double>(sum.system_usec) * k_us;
        } else {
            store(values, k_usage, st->usage_usec, k_us, m_problems, "cpu.stat", "usage_usec");
            store(values, k_user, st->user_usec, k_us, m_problems, "cpu.stat", "user_usec");
            store(values, k_system, st->system_usec, k_us, m_problems, "cpu.stat", "system_usec");
        }
        // Without the cpu controller enabled, v2 cpu.stat has no throttling keys.
        if (!st->nr_periods && !st->nr_throttled && !st->throttled_usec) {
            note_once("cpu.stat: no throttling keys (cpu controller not enabled)");
            return;
        }
        store(values, k_nr_periods, st->nr_periods, 1.0, m_problems, "cpu.stat", "nr_periods");
        store(values, k_nr_throttled, st->nr_throttled, 1.0, m_problems, "cpu.stat", "nr_throttled");
        store(values, k_throttled_time, st->throttled_usec, k_us, m_problems, "cpu.stat", "throttled_usec");
    }

    // A lasting condition (a controller missing) is reported in one sample,
    // not in every sample; its metrics stay NaN.
    void note_once(std::string_view text) noexcept
    {
        if (!m_noted) {
            m_problems.item(text);
            m_noted = true;
        }
    }

    CpuFiles m_f;
    bool m_noted = false;
};

}  // namespace

const std::vector<wire::MetricDescriptor> &cgroup_cpu_metrics()
{
    using wire::MetricKind;
    static const std::vector<wire::MetricDescriptor> k_metrics = {
        {"usage", "s", MetricKind::counter},        {"user", "s", MetricKind::counter},
        {"system", "s", MetricKind::counter},       {"nr_periods", "1", MetricKind::counter},
        {"nr_throttled", "1", MetricKind::counter}, {"throttled_time", "s", MetricKind::counter},
    };
    return k_metrics;
}

Result<std::unique_ptr<MetricBackend>> make_cgroup_cpu_backend(const JobContext &ctx)
{
    CpuFiles f;
    if (ctx.cgroup.version == cgroup::Version::v2) {
        auto dir = controller_dir(ctx.cgroup, "cpu", k_name);
        if (!dir)
            return dir.error();
        f.v2 = true;
        f.cpu_stat = KeptFile(*dir, "cpu.stat");
        if (auto r = require_open(f.cpu_stat, k_name); !r)
            return r.error();
        if (!ctx.cpu_leaves.empty())
            f.leaves.emplace(*dir, ctx.cpu_leaves);
        auto backend = std::make_unique<CgroupCpuBackend>(std::move(f));
        backend->set_cgroup_dirs({*dir});
        return std::unique_ptr<MetricBackend>(std::move(backend));
    }

    auto acct = controller_dir(ctx.cgroup, "cpuacct", k_name);
    if (!acct)
        return acct.error();
    f.usage = KeptFile(*acct, "cpuacct.usage");
    if (auto r = require_open(f.usage, k_name); !r)
        return r.error();
    f.usage_user = KeptFile(*acct, "cpuacct.usage_user");
    f.usage_sys = KeptFile(*acct, "cpuacct.usage_sys");
    f.split_usage = f.usage_user.is_open() && f.usage_sys.is_open();
    if (!f.split_usage)
        f.cpuacct_stat = KeptFile(*acct, "cpuacct.stat");
    long hz = sysconf(_SC_CLK_TCK);
    f.tick_s = 1.0 / static_cast<double>(hz > 0 ? hz : 100);

    // The cpu controller (throttling) is optional: often co-mounted with
    // cpuacct, but its absence only costs the three throttling metrics.
    std::vector<std::filesystem::path> dirs{*acct};
    if (auto cpu = controller_dir(ctx.cgroup, "cpu", k_name)) {
        f.cpu_stat = KeptFile(*cpu, "cpu.stat");
        dirs.push_back(*cpu);
    } else {
        f.cpu_mounted = false;
    }
    auto backend = std::make_unique<CgroupCpuBackend>(std::move(f));
    backend->set_cgroup_dirs(std::move(dirs));
    return std::unique_ptr<MetricBackend>(std::move(backend));
}

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_cgroup_cpu_factory;
constexpr BackendFactory k_cgroup_cpu_factory =
    job_backend_factory(*spec::backend_info("cgroup_cpu"), &make_cgroup_cpu_backend);

}  // namespace colmet::node::backends
