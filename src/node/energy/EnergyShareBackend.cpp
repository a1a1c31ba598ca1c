#include "node/energy/EnergyShareBackend.hpp"

#include "node/energy/EnergySplit.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace colmet::node::energy {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

const wire::BackendBlock *find_block(const wire::Message &msg, std::string_view name)
{
    for (const auto &b : msg.backends)
        if (b.name == name)
            return &b;
    return nullptr;
}

double value_of(const wire::BackendBlock *block, std::string_view metric)
{
    if (!block)
        return k_nan;
    const size_t n = std::min(block->metrics.size(), block->values.size());
    for (size_t i = 0; i < n; ++i)
        if (block->metrics[i].name == metric)
            return block->values[i];
    return k_nan;
}

}  // namespace

EnergyShareBackend::EnergyShareBackend(const std::vector<wire::MetricDescriptor> &rapl_metrics,
                                       const std::filesystem::path &proc_root)
    : m_domains(rapl_metrics.size()), m_stat(proc_root)
{
    for (const auto &m : rapl_metrics)
        m_metrics.push_back({m.name, "J", wire::MetricKind::counter});
    m_metrics.push_back({"node_busy_cpu", "s", wire::MetricKind::counter});
    m_metrics.push_back({"node_cpus", "1", wire::MetricKind::gauge});
    m_metrics.push_back({"utilisation", "1", wire::MetricKind::gauge});
}

void EnergyShareBackend::sample(std::span<double> values) noexcept
{
    std::fill(values.begin(), values.end(), k_nan);  // needs the message: sample_from()
    set_status("energy: computed from the message only");
}

void EnergyShareBackend::sample_from(const wire::Message &msg, std::span<double> values) noexcept
{
    m_problems.clear();
    std::fill(values.begin(), values.end(), k_nan);
    for (const auto &[key, value] : msg.meta)
        if (key == "cpus") {
            double cpus = 0;
            if (std::from_chars(value.data(), value.data() + value.size(), cpus).ec == std::errc() && cpus >= 0)
                m_allocated = cpus;
        }
    const size_t n = m_domains.size();
    CpuTimes node;
    const bool have_node = m_stat.read(node, m_problems);
    if (have_node) {
        values[n] = node.busy_s;
        values[n + 1] = node.cpus;
    }
    const double usage = value_of(find_block(msg, "cgroup_cpu"), "usage");
    if (std::isnan(usage))
        m_problems.item("the job's CPU time (cgroup_cpu usage) is unknown");
    if (m_allocated < 0)
        m_problems.item("the job's CPUs are unknown: no idle baseline charged");
    const wire::BackendBlock *rapl = find_block(msg, "rapl");
    const double allocated = std::max(m_allocated, 0.0);
    for (size_t i = 0; i < n; ++i) {
        Domain &d = m_domains[i];
        const double energy = rapl && i < rapl->values.size() && rapl->metrics.size() == n ? rapl->values[i] : k_nan;
        if (!have_node || std::isnan(usage) || std::isnan(energy))
            continue;  // NaN now; the next known interval spans this one
        if (d.have_prev && energy >= d.prev_energy && msg.time_ns > d.prev_ns) {
            const NodeInterval interval{energy - d.prev_energy, static_cast<double>(msg.time_ns - d.prev_ns) / 1e9,
                                        std::max(node.busy_s - d.prev_busy, 0.0), node.cpus};
            const std::array<JobInterval, 1> job{{{std::max(usage - d.prev_usage, 0.0), allocated}}};
            const EnergySplit split = split_energy(interval, job);
            d.total += split.jobs[0];
            values[n + 2] = split.utilisation;
        }
        d = {true, energy, usage, node.busy_s, msg.time_ns, d.total};
        values[i] = d.total;
    }
    if (n > 0 && !rapl)
        m_problems.item("no rapl values");
    set_status(m_problems.view());
}

}  // namespace colmet::node::energy
