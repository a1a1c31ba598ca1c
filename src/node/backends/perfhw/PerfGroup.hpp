// Counting a list of perf events for one cgroup on a list of CPUs.
//
// perf in cgroup mode is per CPU: each (event, CPU) is one fd, counting only
// while a task of the cgroup runs on that CPU. Events are grouped per CPU so
// that one read() returns a whole group (PERF_FORMAT_GROUP) with its
// time_enabled / time_running. Groups are formed per PMU type (all software
// events in one group, each other attr.type in its own), and an event whose
// joining a group fails is retried as the leader of a new group, so grouping
// never makes an event fail that would open on its own (x86 refuses at open
// time a group larger than the PMU's counters).
//
// Events that open on no CPU are left out: "unsupported" when every error was
// ENOENT, EOPNOTSUPP, ENODEV or EINVAL (no such event or PMU here), "failed"
// otherwise (EACCES/EPERM: perf_event_paranoid or a missing capability).
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "perf/PerfEventSpec.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace colmet::node::backends::perfhw {

// One event's reading summed over the CPU groups it is in.
struct EventTotals {
    uint64_t raw = 0;          // sum of the unscaled counts
    double scaled = 0;         // sum of count * enabled / running over groups that ran
    uint64_t enabled = 0;      // sum of time_enabled (ns)
    uint64_t running = 0;      // sum of time_running (ns)
    uint64_t enabled_ran = 0;  // sum of time_enabled over groups with time_running > 0
};

// The count estimate: `scaled`, extrapolated over the enabled time of groups
// that never ran; NaN when the event was enabled but never ran anywhere (no
// information: "not scheduled"); 0 when never enabled (the cgroup did not
// run on these CPUs, so there was nothing to count).
double estimate(const EventTotals &t) noexcept;

// running / enabled: 1 when never enabled (nothing was multiplexed away).
double running_ratio(const EventTotals &t) noexcept;

// True when the event was enabled but never counted (value unknown).
inline bool not_scheduled(const EventTotals &t) noexcept { return t.enabled > 0 && t.running == 0; }

// Parse one PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING read,
// {nr, time_enabled, time_running, value[nr]}, of a group of n_events members
// and add member i to totals[slots[i]] (members come in the order they
// joined, leader first, so PERF_FORMAT_ID is not needed). A group with time_running == 0
// contributes its enabled time only. Returns false (adding nothing) when nr
// differs from n_events or a slot is out of range.
bool scale_group_read(const uint64_t *buf, size_t n_events, std::span<const uint32_t> slots,
                      std::span<EventTotals> totals) noexcept;

enum class EventState : uint8_t { counting, unsupported, failed };

// The CPUs holding at least one fd, and how many fds each.
struct OpenCpu {
    int cpu = -1;
    size_t fds = 0;
    size_t groups = 0;
};

class PerfGroup {
public:
    PerfGroup() = default;
    PerfGroup(PerfGroup &&) noexcept = default;
    PerfGroup &operator=(PerfGroup &&) noexcept = default;
    ~PerfGroup() { close(); }

    // Open and enable the events for the cgroup behind `cgroup_fd` (a
    // directory of the perf_event hierarchy) on `cpus`. Events that open on
    // no CPU do not fail the call: see state(). Fails only when enabling a
    // group fails, or with no CPU or no event.
    static Result<PerfGroup> open(std::span<const perf::PerfEventSpec> events, int cgroup_fd,
                                  std::span<const int> cpus);

    size_t event_count() const { return m_states.size(); }
    EventState state(size_t event) const { return m_states[event]; }
    // Why an event is not counting ("No such file or directory"); empty when counting.
    const std::string &problem(size_t event) const { return m_problems[event]; }
    bool any_counting() const { return !m_groups.empty(); }

    std::vector<OpenCpu> open_cpus() const;
    size_t fd_count() const;

    // Read every group into totals (size event_count(), cleared first).
    // Returns the number of groups whose read failed; *last_errno tells why
    // (0 for a short read). No allocation.
    size_t read(std::span<EventTotals> totals, int *last_errno) noexcept;

    // Disable and reset every group (PERF_IOC_FLAG_GROUP), then close all fds.
    void close() noexcept;

private:
    struct Group {
        int cpu = -1;
        uint32_t type = 0;
        std::vector<UniqueFd> fds;    // fds[0] is the leader
        std::vector<uint32_t> slots;  // event index of each member
    };

    std::vector<Group> m_groups;
    std::vector<EventState> m_states;
    std::vector<std::string> m_problems;
    std::vector<uint64_t> m_buf;  // 3 + largest group
};

}  // namespace colmet::node::backends::perfhw
