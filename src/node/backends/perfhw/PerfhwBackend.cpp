#include "node/backends/perfhw/PerfhwBackend.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "common/cpu_list.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"
#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

namespace colmet::node::backends::perfhw {
namespace {

namespace fs = std::filesystem;

constexpr size_t k_status_capacity = 256;  // what MetricBackend::set_status keeps
constexpr std::string_view k_scaling_suffix = ".scaling";

Result<std::vector<int>> read_cpu_list(const fs::path &file)
{
    auto text = read_file(file);
    if (!text)
        return text.error();
    auto cpus = parse_cpu_list(*text);
    if (!cpus)
        return cpus.error().with_context(file.string());
    return cpus;
}

std::string cpu_text(const std::vector<int> &cpus)
{
    std::string text;
    for (int cpu : cpus)
        text += (text.empty() ? "" : ",") + std::to_string(cpu);
    return text;
}

}  // namespace

Result<std::vector<int>> job_cpus(const cgroup::CgroupPaths &paths, const fs::path &sysfs_root)
{
    auto online = read_cpu_list(sysfs_root / "devices/system/cpu/online");
    std::vector<int> cpuset;
    if (fs::path dir = paths.dir_for("cpuset"); !dir.empty()) {
        for (const char *file : {"cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"}) {
            auto cpus = read_cpu_list(dir / file);
            if (cpus && !cpus->empty()) {
                cpuset = std::move(*cpus);
                break;
            }
        }
    }
    if (!online && cpuset.empty())
        return online.error().with_context("perfhw: no cpuset for the job and no online CPU list");
    if (!online)
        return cpuset;
    if (cpuset.empty())
        return std::move(*online);
    std::vector<int> both;
    std::set_intersection(cpuset.begin(), cpuset.end(), online->begin(), online->end(), std::back_inserter(both));
    if (both.empty())
        return std::move(*online);  // a stale cpuset: count everywhere rather than nowhere
    return both;
}

PerfhwBackend::PerfhwBackend(std::vector<perf::PerfEventSpec> events, fs::path perf_dir, cgroup::CgroupPaths paths,
                             fs::path sysfs_root)
    : m_events(std::move(events)), m_perf_dir(std::move(perf_dir)), m_paths(std::move(paths)),
      m_sysfs_root(std::move(sysfs_root))
{
    size_t n = m_events.size();
    for (const auto &e : m_events)
        m_metrics.push_back({e.name, e.unit.empty() ? "1" : e.unit, wire::MetricKind::counter});
    for (const auto &e : m_events)
        m_metrics.push_back({e.name + std::string(k_scaling_suffix), "1", wire::MetricKind::gauge});
    m_totals.resize(n);
    m_base.assign(n, 0.0);
    m_prev_enabled.assign(n, 0);
    m_prev_running.assign(n, 0);
    m_text.reserve(k_status_capacity);
}

Result<void> PerfhwBackend::open()
{
    auto cpus = job_cpus(m_paths, m_sysfs_root);
    if (!cpus)
        return cpus.error();
    UniqueFd dir(::open(m_perf_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid())
        return Error::system("perfhw: open", m_perf_dir.string(), errno);
    auto group = PerfGroup::open(m_events, dir.get(), *cpus);
    if (!group)
        return group.error();

    std::string unsupported;
    std::string failed;
    std::string every;  // every event's reason, for a total failure
    bool all_unsupported = true;
    for (size_t i = 0; i < m_events.size(); ++i) {
        EventState state = group->state(i);
        if (state == EventState::counting)
            continue;
        std::string &list = state == EventState::unsupported ? unsupported : failed;
        list += (list.empty() ? "" : ", ") + m_events[i].name;
        if (state == EventState::failed) {
            list += ": " + group->problem(i);
            all_unsupported = false;
        }
        every += (every.empty() ? "" : "; ") + m_events[i].name + ": " + group->problem(i);
    }
    if (!group->any_counting())
        return Error(all_unsupported ? Errc::unsupported : Errc::system, "perfhw: no event could be opened for " +
                                                                             m_perf_dir.string() + " on CPUs " +
                                                                             cpu_text(*cpus) + ": " + every);

    m_open_problems.clear();
    if (!unsupported.empty())
        m_open_problems = "unsupported: " + unsupported;
    if (!failed.empty())
        m_open_problems += (m_open_problems.empty() ? "" : "; ") + std::string("failed: ") + failed;
    m_group = std::move(*group);
    m_cpus = std::move(*cpus);
    std::fill(m_prev_enabled.begin(), m_prev_enabled.end(), 0);
    std::fill(m_prev_running.begin(), m_prev_running.end(), 0);
    m_report_open_problems = !m_open_problems.empty();
    m_released = false;
    return ok();
}

void PerfhwBackend::append(std::string_view text) noexcept
{
    size_t room = m_text.capacity() - m_text.size();
    m_text.append(text.substr(0, room));
}

void PerfhwBackend::fill_nan(std::span<double> values) noexcept
{
    std::fill(values.begin(), values.end(), std::numeric_limits<double>::quiet_NaN());
}

void PerfhwBackend::sample(std::span<double> values) noexcept
{
    const size_t n = m_events.size();
    m_text.clear();
    if (m_released || values.size() < 2 * n) {
        fill_nan(values);
        set_status(m_released ? "counters released" : "perfhw: value buffer too small");
        return;
    }
    int err = 0;
    if (m_group.read(m_totals, &err) != 0) {
        fill_nan(values);
        append("read: ");
        const char *why = err != 0 ? ::strerrordesc_np(err) : "short read";  // static text, no allocation
        append(why != nullptr ? why : "unknown error");
        set_status(m_text);
        return;
    }
    if (m_report_open_problems) {
        append(m_open_problems);
        m_report_open_problems = false;
    }
    bool listed = false;
    for (size_t i = 0; i < n; ++i) {
        const EventTotals &t = m_totals[i];
        if (m_group.state(i) != EventState::counting) {
            values[i] = values[n + i] = std::numeric_limits<double>::quiet_NaN();
            continue;
        }
        double count = estimate(t);
        if (std::isnan(count)) {
            append(listed ? ", " : (m_text.empty() ? "not scheduled: " : "; not scheduled: "));
            append(m_events[i].name);
            listed = true;
            values[i] = count;
        } else {
            values[i] = m_base[i] + count * m_events[i].scale;
        }
        uint64_t enabled = t.enabled - std::min(t.enabled, m_prev_enabled[i]);
        uint64_t running = t.running - std::min(t.running, m_prev_running[i]);
        values[n + i] = enabled == 0 ? 1.0 : static_cast<double>(running) / static_cast<double>(enabled);
        m_prev_enabled[i] = t.enabled;
        m_prev_running[i] = t.running;
    }
    set_status(m_text);
}

void PerfhwBackend::release() noexcept
{
    if (m_released)
        return;
    int err = 0;
    if (m_group.read(m_totals, &err) == 0)
        for (size_t i = 0; i < m_events.size(); ++i)
            if (m_group.state(i) == EventState::counting)
                if (double count = estimate(m_totals[i]); !std::isnan(count))
                    m_base[i] += count * m_events[i].scale;
    m_group.close();
    m_released = true;
}

void PerfhwBackend::continue_from(PerfhwBackend &previous) noexcept
{
    previous.release();
    if (previous.m_events.size() != m_events.size())
        return;
    for (size_t i = 0; i < m_events.size(); ++i)
        if (previous.m_events[i].name != m_events[i].name)
            return;
    std::copy(previous.m_base.begin(), previous.m_base.end(), m_base.begin());
}

Result<void> PerfhwBackend::reopen()
{
    release();
    return open();
}

Result<std::unique_ptr<MetricBackend>> make_perfhw_backend(const JobContext &ctx,
                                                           const std::vector<perf::PerfEventSpec> &events,
                                                           const fs::path &cgroup_root, const fs::path &sysfs_root)
{
    if (events.empty())
        return Error::invalid("perfhw: no event requested");
    for (size_t i = 0; i < events.size(); ++i) {
        const auto &name = events[i].name;
        if (name.empty() || name.size() + k_scaling_suffix.size() > wire::k_max_name_length)
            return Error::invalid("perfhw: event name '" + name + "' is empty or longer than " +
                                  std::to_string(wire::k_max_name_length - k_scaling_suffix.size()) + " bytes");
        for (size_t j = 0; j < i; ++j)
            if (events[j].name == name)
                return Error::invalid("perfhw: event '" + name + "' requested twice");
    }

    fs::path perf_dir;
    if (ctx.cgroup.version == cgroup::Version::v2 && !ctx.cgroup.unified.empty()) {
        // v2: perf_event is implicit, the job's own directory takes the
        // events. Nothing to mount (mounting perf_event on v1 would take the
        // controller away from the unified tree).
        perf_dir = ctx.cgroup.unified;
    } else {
        auto perf_root = cgroup::ensure_perf_event_hierarchy(cgroup_root);
        if (!perf_root)
            return perf_root.error();
        auto dir = cgroup::ensure_job_perf_cgroup(*perf_root, ctx.cgroup.relative);
        if (!dir)
            return dir.error();
        if (auto r = cgroup::move_job_procs(ctx.cgroup, *dir); !r)
            return r.error().with_context("perfhw: moving the job's processes");
        perf_dir = std::move(*dir);
    }

    auto backend = std::make_unique<PerfhwBackend>(events, std::move(perf_dir), ctx.cgroup, sysfs_root);
    if (auto r = backend->open(); !r)
        return r.error();
    return std::unique_ptr<MetricBackend>(std::move(backend));
}

}  // namespace colmet::node::backends::perfhw
