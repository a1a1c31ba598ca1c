#include "node/energy/EnergyShareBackend.hpp"

#include "node/backends/rapl/RaplBackend.hpp"
#include "node/energy/EnergySplit.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace colmet::node::energy {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
// Updates of the ledger that may fail in a row before the share is
// estimated alone for the rest of the job.
constexpr int k_ledger_failures = 20;

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
                                       const std::filesystem::path &proc_root, std::optional<LedgerSetup> ledger)
    : m_domains(rapl_metrics.size()), m_stat(proc_root), m_carried(rapl_metrics.size(), 0.0),
      m_last(rapl_metrics.size(), 0.0)
{
    for (const auto &m : rapl_metrics)
        m_metrics.push_back({m.name, "J", wire::MetricKind::counter});
    m_metrics.push_back({"node_busy_cpu", "s", wire::MetricKind::counter});
    m_metrics.push_back({"node_cpus", "1", wire::MetricKind::gauge});
    m_metrics.push_back({"utilisation", "1", wire::MetricKind::gauge});
    m_metrics.push_back({"ledger_jobs", "1", wire::MetricKind::gauge});
    if (ledger && ledger->counters.size() == rapl_metrics.size()) {
        m_ledger = std::make_unique<LedgerFile>(ledger->path, std::move(ledger->counters), proc_root);
        m_self = std::move(ledger->self);
    }
}

EnergyShareBackend::~EnergyShareBackend()
{
    if (m_ledger && m_in_ledger)
        m_ledger->leave(m_self);
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
    if (m_allocated < 0)
        m_problems.item("the job's CPUs are unknown: no idle baseline charged");
    if (m_ledger)
        from_ledger(msg, values);
    else
        estimate(msg, values);
    if (!m_gave_up.empty())
        m_problems.item("energy ledger not used (").add(m_gave_up).add("): this job's share estimated alone");
    set_status(m_problems.view());
}

void EnergyShareBackend::give_up_ledger(const std::string &why)
{
    if (m_in_ledger)
        m_ledger->leave(m_self);
    m_ledger.reset();
    m_in_ledger = false;
    m_gave_up = why;
    // The estimates carry on from the last shares reported.
    for (size_t i = 0; i < m_domains.size(); ++i)
        m_domains[i] = Domain{false, 0, 0, 0, 0, m_last[i]};
}

void EnergyShareBackend::from_ledger(const wire::Message &msg, std::span<double> values) noexcept
{
    const size_t n = m_domains.size();
    try {
        m_self.allocated_cpus = std::max(m_allocated, 0.0);
        const bool leaving = msg.kind == wire::MessageKind::job_end;
        auto view = m_ledger->update(m_self, leaving, m_problems);
        if (!view) {
            m_problems.item(view.error().message());
            // Another tree's ledger in use stays so; anything else may pass
            // (a busy disk, a sampler that held the lock too long).
            if (view.error().code() == Errc::invalid || ++m_ledger_failures >= k_ledger_failures) {
                give_up_ledger(view.error().message());
                estimate(msg, values);
            }
            return;
        }
        m_ledger_failures = 0;
        if (view->entered && m_in_ledger)  // taken out meanwhile: what it had is kept
            for (size_t i = 0; i < n; ++i)
                m_carried[i] = m_last[i];
        m_in_ledger = !leaving;
        for (size_t i = 0; i < n && i < view->shares_j.size(); ++i) {
            m_last[i] = m_carried[i] + view->shares_j[i];
            values[i] = m_last[i];
        }
        values[n] = view->busy_s;
        values[n + 1] = view->cpus;
        values[n + 2] = view->utilisation;
        values[n + 3] = static_cast<double>(view->jobs);
    } catch (const std::exception &e) {  // allocation: the sample goes without
        m_problems.item("energy ledger: ").add(e.what());
    }
}

void EnergyShareBackend::estimate(const wire::Message &msg, std::span<double> values) noexcept
{
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
        m_last[i] = d.total;
    }
    if (n > 0 && !rapl)
        m_problems.item("no rapl values");
}

std::unique_ptr<EnergyShareBackend> make_energy_share(const MetricBackend &rapl, const JobContext &ctx,
                                                      const std::filesystem::path &ledger_path, std::string &note)
{
    std::optional<LedgerSetup> ledger;
    const auto *powercap = dynamic_cast<const backends::rapl::RaplBackend *>(&rapl);
    if (ledger_path.empty()) {
        note = "no energy ledger (--energy-ledger \"\")";
    } else if (!powercap || powercap->source() != backends::rapl::Source::powercap) {
        note = "no energy ledger: RAPL is read from the perf power PMU, whose counts each sampler starts at 0";
    } else {
        LedgerSetup setup;
        setup.path = ledger_path;
        for (const auto &d : powercap->domains())
            setup.counters.push_back({d.metric, d.dir / "energy_uj", d.max_range_uj});
        setup.self.id = ctx.job_id;
        setup.self.pid = ::getpid();
        setup.self.cpu.v2 = ctx.cgroup.version == cgroup::Version::v2;
        setup.self.cpu.dir = (setup.self.cpu.v2 ? ctx.cgroup.unified : ctx.cgroup.dir_for("cpuacct")).string();
        setup.self.cpu.leaves = ctx.cpu_leaves;
        if (auto ok = check_ledger_job(setup.self.id, setup.self.cpu); !ok)
            note = "no energy ledger: " + ok.error().message();
        else
            ledger = std::move(setup);
    }
    return std::make_unique<EnergyShareBackend>(rapl.metrics(), ctx.proc_root, std::move(ledger));
}

}  // namespace colmet::node::energy
