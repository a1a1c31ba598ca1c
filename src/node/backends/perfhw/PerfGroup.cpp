#include "node/backends/perfhw/PerfGroup.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

namespace colmet::node::backends::perfhw {
namespace {

constexpr uint64_t k_read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
constexpr size_t k_header_words = 3;  // nr, time_enabled, time_running

int perf_event_open(const perf::PerfEventSpec &spec, bool leader, int cgroup_fd, int cpu, int group_fd)
{
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = spec.type;
    attr.config = spec.config;
    attr.config1 = spec.config1;
    attr.config2 = spec.config2;
    attr.read_format = k_read_format;
    // The leader starts disabled and is enabled with its whole group once
    // every group is open; members follow their leader.
    attr.disabled = leader ? 1 : 0;
    long fd =
        ::syscall(SYS_perf_event_open, &attr, cgroup_fd, cpu, group_fd, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
    return static_cast<int>(fd);
}

// ENOENT, EOPNOTSUPP, ENODEV, EINVAL: the event or its PMU does not exist
// here (or not in this mode), as opposed to a refusal or a resource limit.
bool means_unsupported(int err) { return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL; }

std::string describe_errno(int err)
{
    std::string text = std::strerror(err);
    if (err == EACCES || err == EPERM)
        text += " (perf_event_paranoid / capability: cgroup mode needs CAP_PERFMON or CAP_SYS_ADMIN)";
    else if (err == EMFILE || err == ENFILE)
        text += " (one fd per event and CPU: raise RLIMIT_NOFILE)";
    return text;
}

// What happened to one event over all CPUs.
struct OpenOutcome {
    bool opened = false;
    int unsupported_errno = 0;  // first "does not exist here" error
    int other_errno = 0;        // first other error
};

}  // namespace

double estimate(const EventTotals &t) noexcept
{
    if (t.enabled == 0)
        return t.scaled;  // never enabled: the cgroup did not run here, nothing to count
    if (t.running == 0)
        return std::numeric_limits<double>::quiet_NaN();
    if (t.enabled_ran < t.enabled && t.enabled_ran > 0)
        return t.scaled * static_cast<double>(t.enabled) / static_cast<double>(t.enabled_ran);
    return t.scaled;
}

double running_ratio(const EventTotals &t) noexcept
{
    if (t.enabled == 0)
        return 1.0;
    return static_cast<double>(t.running) / static_cast<double>(t.enabled);
}

bool scale_group_read(const uint64_t *buf, size_t n_events, std::span<const uint32_t> slots,
                      std::span<EventTotals> totals) noexcept
{
    if (buf == nullptr || buf[0] != n_events || slots.size() < n_events)
        return false;
    for (size_t i = 0; i < n_events; ++i)
        if (slots[i] >= totals.size())
            return false;
    uint64_t enabled = buf[1];
    uint64_t running = buf[2];
    for (size_t i = 0; i < n_events; ++i) {
        EventTotals &t = totals[slots[i]];
        uint64_t value = buf[k_header_words + i];
        t.raw += value;
        t.enabled += enabled;
        t.running += running;
        if (running > 0) {
            t.scaled += static_cast<double>(value) * static_cast<double>(enabled) / static_cast<double>(running);
            t.enabled_ran += enabled;
        }
    }
    return true;
}

Result<PerfGroup> PerfGroup::open(std::span<const perf::PerfEventSpec> events, int cgroup_fd, std::span<const int> cpus)
{
    if (events.empty())
        return Error::invalid("perfhw: no event to open");
    if (cpus.empty())
        return Error::invalid("perfhw: no CPU to open the events on");

    PerfGroup g;
    std::vector<OpenOutcome> outcome(events.size());
    for (int cpu : cpus) {
        // The group currently filled for each attr.type on this CPU.
        std::vector<std::pair<uint32_t, size_t>> current;
        for (size_t i = 0; i < events.size(); ++i) {
            const perf::PerfEventSpec &spec = events[i];
            auto cur =
                std::find_if(current.begin(), current.end(), [&](const auto &c) { return c.first == spec.type; });
            if (cur != current.end()) {
                Group &group = g.m_groups[cur->second];
                int fd = perf_event_open(spec, false, cgroup_fd, cpu, group.fds.front().get());
                if (fd >= 0) {
                    group.fds.emplace_back(fd);
                    group.slots.push_back(static_cast<uint32_t>(i));
                    outcome[i].opened = true;
                    continue;
                }
                // Could not join (group too large for the PMU, or a PMU that
                // refuses this mix): try it as the leader of a new group.
            }
            int fd = perf_event_open(spec, true, cgroup_fd, cpu, -1);
            if (fd < 0) {
                int err = errno;
                int &slot = means_unsupported(err) ? outcome[i].unsupported_errno : outcome[i].other_errno;
                if (slot == 0)
                    slot = err;
                continue;
            }
            Group group;
            group.cpu = cpu;
            group.type = spec.type;
            group.fds.emplace_back(fd);
            group.slots.push_back(static_cast<uint32_t>(i));
            g.m_groups.push_back(std::move(group));
            if (cur != current.end())
                cur->second = g.m_groups.size() - 1;
            else
                current.emplace_back(spec.type, g.m_groups.size() - 1);
            outcome[i].opened = true;
        }
    }

    g.m_states.resize(events.size(), EventState::counting);
    g.m_problems.resize(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
        if (outcome[i].opened)
            continue;
        if (outcome[i].other_errno != 0) {
            g.m_states[i] = EventState::failed;
            g.m_problems[i] = describe_errno(outcome[i].other_errno);
        } else {
            g.m_states[i] = EventState::unsupported;
            g.m_problems[i] = describe_errno(outcome[i].unsupported_errno);
        }
    }

    size_t largest = 0;
    for (const auto &group : g.m_groups)
        largest = std::max(largest, group.fds.size());
    g.m_buf.assign(k_header_words + largest, 0);

    for (const auto &group : g.m_groups)
        if (::ioctl(group.fds.front().get(), PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0)
            return Error::system("perfhw: ioctl PERF_EVENT_IOC_ENABLE on CPU", std::to_string(group.cpu), errno);
    return g;
}

std::vector<OpenCpu> PerfGroup::open_cpus() const
{
    std::vector<OpenCpu> cpus;
    for (const auto &group : m_groups) {
        auto it = std::find_if(cpus.begin(), cpus.end(), [&](const OpenCpu &c) { return c.cpu == group.cpu; });
        if (it == cpus.end())
            it = cpus.insert(cpus.end(), OpenCpu{group.cpu, 0, 0});
        it->fds += group.fds.size();
        ++it->groups;
    }
    std::sort(cpus.begin(), cpus.end(), [](const OpenCpu &a, const OpenCpu &b) { return a.cpu < b.cpu; });
    return cpus;
}

size_t PerfGroup::fd_count() const
{
    size_t n = 0;
    for (const auto &group : m_groups)
        n += group.fds.size();
    return n;
}

size_t PerfGroup::read(std::span<EventTotals> totals, int *last_errno) noexcept
{
    std::fill(totals.begin(), totals.end(), EventTotals{});
    size_t failed = 0;
    for (const auto &group : m_groups) {
        size_t n = group.fds.size();
        size_t bytes = (k_header_words + n) * sizeof(uint64_t);
        ssize_t got = ::read(group.fds.front().get(), m_buf.data(), bytes);
        if (got != static_cast<ssize_t>(bytes)) {
            if (last_errno != nullptr)
                *last_errno = got < 0 ? errno : 0;
            ++failed;
            continue;
        }
        if (!scale_group_read(m_buf.data(), n, group.slots, totals)) {
            if (last_errno != nullptr)
                *last_errno = 0;
            ++failed;
        }
    }
    return failed;
}

void PerfGroup::close() noexcept
{
    for (const auto &group : m_groups) {
        int leader = group.fds.front().get();
        (void)::ioctl(leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
        (void)::ioctl(leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    }
    for (auto &group : m_groups)
        for (auto fd = group.fds.rbegin(); fd != group.fds.rend(); ++fd)
            fd->reset();  // members first, the leader last
    m_groups.clear();
}

}  // namespace colmet::node::backends::perfhw
