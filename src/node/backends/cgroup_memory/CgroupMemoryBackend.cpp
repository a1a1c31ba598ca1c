#include "node/backends/cgroup_memory/CgroupMemoryBackend.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/cgroup_memory/memory_parsers.hpp"
#include "node/backends/support/CgroupFileBackend.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/backend_util.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>

namespace colmet::node::backends {
namespace {

constexpr std::string_view k_name = "cgroup_memory";
enum Index : size_t { k_current, k_peak, k_anon, k_file, k_major_faults, k_limit };

// A v1 limit at or above this is "no limit" (the kernel's page-counter
// maximum, 9223372036854771712 on x86_64, rounded down per page size).
constexpr uint64_t k_v1_unlimited = uint64_t{1} << 62;

struct MemoryFiles {
    bool v2 = false;
    KeptFile current;  // memory.usage_in_bytes (v1) / memory.current (v2)
    KeptFile peak;     // memory.max_usage_in_bytes (v1) / memory.peak (v2)
    KeptFile stat;     // memory.stat
    KeptFile limit;    // memory.limit_in_bytes (v1) / memory.max (v2)
};

class CgroupMemoryBackend final : public CgroupFileBackend {
public:
    explicit CgroupMemoryBackend(MemoryFiles files) : m_f(std::move(files)) {}

    std::string_view name() const override { return k_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return cgroup_memory_metrics(); }

private:
    void read_files(std::span<double> values) noexcept override
    {
        if (auto bytes = read_u64(m_f.current, m_problems))
            values[k_current] = static_cast<double>(*bytes);
        read_peak(values);
        read_stat(values);
        read_limit(values);
    }

    // The job cgroup's own limit; NaN when it has none ("max", or v1's
    // page-counter maximum) or no such file (a root cgroup).
    void read_limit(std::span<double> values) noexcept
    {
        if (!m_f.limit.is_open() && m_f.limit.open_errno() == ENOENT)
            return;
        std::string_view text;
        if (!m_f.limit.read(text, m_problems))
            return;
        while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
            text.remove_suffix(1);
        if (text == "max")
            return;
        uint64_t bytes = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
            m_problems.item(m_f.v2 ? "memory.max: " : "memory.limit_in_bytes: ").add("not a number");
            return;
        }
        if (!m_f.v2 && bytes >= k_v1_unlimited)
            return;
        values[k_limit] = static_cast<double>(bytes);
    }

    void read_peak(std::span<double> values) noexcept
    {
        // v2 memory.peak appeared in Linux 5.19: when it is absent, say so
        // in one sample and leave the metric NaN without counting a failure
        // every period.
        if (m_f.v2 && !m_f.peak.is_open() && m_f.peak.open_errno() == ENOENT) {
            if (!m_peak_noted)
                m_problems.item("memory.peak: not provided by this kernel (Linux >= 5.19)");
            m_peak_noted = true;
            return;
        }
        if (auto bytes = read_u64(m_f.peak, m_problems))
            values[k_peak] = static_cast<double>(*bytes);
    }

    void read_stat(std::span<double> values) noexcept
    {
        std::string_view text;
        if (!m_f.stat.read(text, m_problems))
            return;
        auto st = m_f.v2 ? parse_v2_memory_stat(text) : parse_v1_memory_stat(text);
        if (!st) {
            m_problems.item("memory.stat: ").add(st.error().message());
            return;
        }
        store(values, k_anon, st->anon, 1.0, m_problems, "memory.stat", m_f.v2 ? "anon" : "total_rss");
        store(values, k_file, st->file, 1.0, m_problems, "memory.stat", m_f.v2 ? "file" : "total_cache");
        store(values, k_major_faults, st->major_faults, 1.0, m_problems, "memory.stat",
              m_f.v2 ? "pgmajfault" : "total_pgmajfault");
    }

    MemoryFiles m_f;
    bool m_peak_noted = false;
};

}  // namespace

const std::vector<wire::MetricDescriptor> &cgroup_memory_metrics()
{
    using wire::MetricKind;
    static const std::vector<wire::MetricDescriptor> k_metrics = {
        {"current", "B", MetricKind::gauge},        {"peak", "B", MetricKind::gauge},
        {"anon", "B", MetricKind::gauge},           {"file", "B", MetricKind::gauge},
        {"major_faults", "1", MetricKind::counter}, {"limit", "B", MetricKind::gauge},
    };
    return k_metrics;
}

Result<std::unique_ptr<MetricBackend>> make_cgroup_memory_backend(const JobContext &ctx)
{
    auto dir = controller_dir(ctx.cgroup, "memory", k_name);
    if (!dir)
        return dir.error();
    MemoryFiles f;
    f.v2 = ctx.cgroup.version == cgroup::Version::v2;
    f.current = KeptFile(*dir, f.v2 ? "memory.current" : "memory.usage_in_bytes");
    if (f.v2 && !f.current.is_open() && f.current.open_errno() == ENOENT)
        return Error(Errc::unsupported, std::string(k_name) + ": memory controller not enabled for " + dir->string() +
                                            " (no memory.current)");
    if (auto r = require_open(f.current, k_name); !r)
        return r.error();
    f.peak = KeptFile(*dir, f.v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    f.stat = KeptFile(*dir, "memory.stat");
    f.limit = KeptFile(*dir, f.v2 ? "memory.max" : "memory.limit_in_bytes");
    auto backend = std::make_unique<CgroupMemoryBackend>(std::move(f));
    backend->set_cgroup_dirs({*dir});
    return std::unique_ptr<MetricBackend>(std::move(backend));
}

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_cgroup_memory_factory;
constexpr BackendFactory k_cgroup_memory_factory =
    job_backend_factory(*spec::backend_info("cgroup_memory"), &make_cgroup_memory_backend);

}  // namespace colmet::node::backends
