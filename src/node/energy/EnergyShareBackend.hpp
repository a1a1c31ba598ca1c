// Backend "energy" (scope job, derived): the job's share of each RAPL
// domain's energy, by the method of EnergySplit.hpp. colmet-node runs it
// beside the rapl backend, after every other backend has read its values.
//
// With the node's energy ledger (LedgerFile.hpp, --energy-ledger; RAPL
// from powercap), every sampler of the node advances one ledger, so the
// shares of all the jobs and the idle part add up to the node's energy. If
// the ledger cannot be used (twenty updates in a row failed, or it counts
// other RAPL files for samplers still running), or without one, the share
// is estimated from this sampler's own readings: the interval's energy from
// the message's rapl block, the job's CPU time from its cgroup_cpu block,
// the node's from /proc/stat, and this job alone against the rest of the
// node; those estimates need not add up across jobs.
//
// Metrics: one per rapl metric, same name, unit "J", counter: the job's
// share since the sampler started (0 at the first sample); then
// node_busy_cpu (s, counter: the node's busy CPU time, /proc/stat),
// node_cpus (gauge), utilisation (gauge, ratio: u of the last interval)
// and ledger_jobs (gauge: the jobs sharing the node's energy in the ledger;
// NaN without one), what the share was computed from. A domain whose
// energy is unknown is NaN (the interval is then counted with the next
// known one); without the job's CPU time or /proc/stat every share is NaN,
// with the reason.
#pragma once

#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"
#include "node/backends/support/StatusText.hpp"
#include "node/energy/LedgerFile.hpp"
#include "node/energy/ProcStat.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace colmet::node::energy {

// The backend's name (on the wire, and for --disable-backend).
inline constexpr std::string_view k_name = "energy";

// The node's ledger and this sampler's job in it.
struct LedgerSetup {
    std::filesystem::path path;
    std::vector<LedgerCounter> counters;  // one per rapl metric, in its order
    LedgerSelf self;                      // allocated_cpus: from the message's "cpus"
};

class EnergyShareBackend final : public MetricBackend {
public:
    EnergyShareBackend(const std::vector<wire::MetricDescriptor> &rapl_metrics, const std::filesystem::path &proc_root,
                       std::optional<LedgerSetup> ledger = std::nullopt);
    ~EnergyShareBackend() override;
    EnergyShareBackend(const EnergyShareBackend &) = delete;
    EnergyShareBackend &operator=(const EnergyShareBackend &) = delete;

    std::string_view name() const override { return k_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    bool reads_message() const override { return true; }
    void sample(std::span<double> values) noexcept override;
    void sample_from(const wire::Message &msg, std::span<double> values) noexcept override;

    double allocated_cpus() const { return m_allocated; }
    // Whether the shares come from the node's ledger (false: estimated).
    bool uses_ledger() const { return m_ledger != nullptr; }

private:
    void from_ledger(const wire::Message &msg, std::span<double> values) noexcept;
    void estimate(const wire::Message &msg, std::span<double> values) noexcept;
    void give_up_ledger(const std::string &why);

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
    std::unique_ptr<LedgerFile> m_ledger;  // null: estimates
    LedgerSelf m_self;
    bool m_in_ledger = false;       // it entered the ledger, and has not left
    std::vector<double> m_carried;  // shares of earlier stays in the ledger (taken out by another sampler)
    std::vector<double> m_last;     // the last shares reported (carried included)
    int m_ledger_failures = 0;      // updates failed in a row
    std::string m_gave_up;          // why the ledger is no longer used
    double m_allocated = -1;        // the job's CPUs (meta "cpus"); < 0: not known yet
    backends::StatusText m_problems;
};

// The backend beside a running rapl backend, for the job of `ctx`: with
// the ledger at `ledger_path` when it is not empty and RAPL is read from
// powercap (`note` then says why not, when not).
std::unique_ptr<EnergyShareBackend> make_energy_share(const MetricBackend &rapl, const JobContext &ctx,
                                                      const std::filesystem::path &ledger_path, std::string &note);

}  // namespace colmet::node::energy
