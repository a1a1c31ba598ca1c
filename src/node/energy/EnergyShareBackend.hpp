// Backend "energy" (scope job, derived): the job's share of each RAPL
// domain's energy, by the method of EnergySplit.hpp, interval by interval
// between this sampler's samples. colmet-node runs it beside the rapl
// backend, after every other backend has read its values: it takes the
// interval's energy from the message's rapl block (already cumulative and
// corrected for counter wraps), the job's CPU time from its cgroup_cpu
// block ("usage"), the job's allocated CPUs from the "cpus" metadata, and
// the node's busy CPU time and CPU count from /proc/stat, read at the same
// moment.
//
// Metrics: one per rapl metric, same name, unit "J", counter: the job's
// share since the sampler started (0 at the first sample); then
// node_busy_cpu (s, counter: the node's busy CPU time, /proc/stat),
// node_cpus (gauge) and utilisation (gauge, ratio: u of the last interval),
// what the share was computed from. A domain whose energy is unknown is
// NaN (the interval is then counted with the next known one); without the
// job's CPU time or /proc/stat every share is NaN, with the reason.
#pragma once

#include "node/MetricBackend.hpp"
#include "node/backends/support/StatusText.hpp"
#include "node/energy/ProcStat.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace colmet::node::energy {

class EnergyShareBackend final : public MetricBackend {
public:
    EnergyShareBackend(const std::vector<wire::MetricDescriptor> &rapl_metrics, const std::filesystem::path &proc_root);

    std::string_view name() const override { return "energy"; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    bool reads_message() const override { return true; }
    void sample(std::span<double> values) noexcept override;
    void sample_from(const wire::Message &msg, std::span<double> values) noexcept override;

    double allocated_cpus() const { return m_allocated; }

private:
    struct Domain {
        bool have_prev = false;
        double prev_energy = 0;
        double prev_usage = 0;
        double prev_busy = 0;
        int64_t prev_ns = 0;
        double total = 0;
    };

    std::vector<wire::MetricDescriptor> m_metrics;
    std::vector<Domain> m_domains;  // one per rapl metric
    ProcStat m_stat;
    double m_allocated = -1;  // the job's CPUs (meta "cpus"); < 0: not known yet
    backends::StatusText m_problems;
};

}  // namespace colmet::node::energy
