// Backend "perfhw": perf events (hardware and software) of the job's cgroup,
// counted in cgroup mode on the job's CPUs (see PerfGroup.hpp, cgroup/PerfEventHierarchy.hpp).
//
// Metrics, for n events in the order given:
//   [0, n)   "<event>"          unit from the spec, counter: the count since
//            the backend started (release()/reopen() keep adding to it),
//            scaled for multiplexing (count * time_enabled / time_running)
//            and by spec.scale (ns -> s for task_clock and cpu_clock);
//   [n, 2n)  "<event>.scaling"  unit "1", gauge: time_running / time_enabled
//            over the last interval, summed over CPUs (1 = never multiplexed,
//            and 1 when the job did not run at all in the interval).
// NaN values and their status:
//   - an event that opened on no CPU: NaN always; the first sample after
//     (re)opening says "unsupported: cpu_cycles, instructions" (or "failed:
//     <event>: <reason>" for refusals such as EACCES), later samples do not
//     repeat it;
//   - an event enabled but never scheduled yet (multiplexed out the whole
//     time, or its group cannot fit the PMU): NaN, "not scheduled: <event>"
//     (a count that was never observed carries no information, never 0);
//   - a failed read(): every value NaN, "read: <reason>";
//   - after release(): every value NaN, "counters released".
// A scaled estimate can step back slightly between samples while multiplexed.
// The CPU list is taken when the counters are opened: a cpuset changed later
// is seen at the next reopen().
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"
#include "node/backends/perfhw/PerfGroup.hpp"
#include "perf/PerfEventSpec.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::backends::perfhw {

// The CPUs to count on: the job's cpuset (cpuset.cpus.effective,
// cpuset.effective_cpus or cpuset.cpus of CgroupPaths::dir_for("cpuset"))
// within the online CPUs, else every online CPU
// (<sysfs_root>/devices/system/cpu/online).
Result<std::vector<int>> job_cpus(const cgroup::CgroupPaths &paths, const std::filesystem::path &sysfs_root);

class PerfhwBackend final : public MetricBackend {
public:
    // perf_dir: the job's directory in the perf_event hierarchy; cpus from
    // job_cpus() (recomputed by reopen() from `paths` and `sysfs_root`).
    PerfhwBackend(std::vector<perf::PerfEventSpec> events, std::filesystem::path perf_dir, cgroup::CgroupPaths paths,
                  std::filesystem::path sysfs_root);
    ~PerfhwBackend() override = default;

    // Open the counters (done by the factory). Fails when no event could be
    // opened at all, naming each event's reason.
    Result<void> open();

    std::string_view name() const override { return "perfhw"; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override;

    // Pause: take a last reading into the running totals, then disable,
    // reset and close every counter.
    void release() noexcept;
    // Resume: open the counters again (CPUs re-read), counting on from the
    // totals kept by release().
    Result<void> reopen();
    bool released() const { return m_released; }
    // Live control (MetricBackend): pause is release(), resume reopen().
    bool live_controlled() const override { return true; }
    void pause() noexcept override { release(); }
    Result<void> resume() override { return reopen(); }
    // Take over `previous`'s counts (it is released first) when it counted
    // the same events: this backend's values go on from its totals, so a
    // job whose counters move to another directory keeps counters that
    // never go back. Another event list: nothing taken.
    void continue_from(PerfhwBackend &previous) noexcept;

    const PerfGroup &counters() const { return m_group; }
    const std::vector<int> &cpus() const { return m_cpus; }
    const std::filesystem::path &perf_dir() const { return m_perf_dir; }
    // "unsupported: a, b; failed: c: <reason>", empty when every event opened.
    const std::string &open_problems() const { return m_open_problems; }

private:
    void fill_nan(std::span<double> values) noexcept;
    void append(std::string_view text) noexcept;  // to m_text, within its capacity

    std::vector<perf::PerfEventSpec> m_events;
    std::filesystem::path m_perf_dir;
    cgroup::CgroupPaths m_paths;
    std::filesystem::path m_sysfs_root;
    std::vector<wire::MetricDescriptor> m_metrics;

    PerfGroup m_group;
    std::vector<int> m_cpus;
    std::vector<EventTotals> m_totals;
    std::vector<double> m_base;            // scaled totals carried over release()
    std::vector<uint64_t> m_prev_enabled;  // for the interval scaling ratio
    std::vector<uint64_t> m_prev_running;
    std::string m_open_problems;
    std::string m_text;  // this sample's status, reserved once
    bool m_released = true;
    bool m_report_open_problems = false;
};

// Build the backend for a job.
//  - v2: the events attach to the job's unified directory.
//  - v1: make sure the perf_event hierarchy under `cgroup_root` and the job's
//    directory in it exist, and move the job's current processes (its
//    cgroup.procs) into it; processes they fork later follow, but tasks
//    started from outside (hooks) must be attached to it too.
// Then pick the CPUs (job_cpus) and open the counters. Fails on an empty or
// duplicate event list, when the hierarchy cannot be set up, or when no
// event could be opened (Errc::unsupported when none exists here).
Result<std::unique_ptr<MetricBackend>> make_perfhw_backend(const JobContext &ctx,
                                                           const std::vector<perf::PerfEventSpec> &events,
                                                           const std::filesystem::path &cgroup_root = "/sys/fs/cgroup",
                                                           const std::filesystem::path &sysfs_root = "/sys");

}  // namespace colmet::node::backends::perfhw
