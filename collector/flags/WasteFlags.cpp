#include "collector/flags/WasteFlags.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace colmet::collector::flags {

namespace {

constexpr double k_ns = 1e9;

void raise(FlagState &state, std::string_view name, std::string text, int64_t when_ns)
{
    if (has_flag(state, name))
        return;
    state.raised.push_back({std::string(name), std::move(text), when_ns});
    state.changed = true;
}

std::string percent(double ratio)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", ratio * 100);
    return buf;
}

std::string seconds(double s)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f s", s);
    return buf;
}

std::string mib(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f MiB", v);
    return buf;
}

// The hosts' CPU time (s) and allocated CPUs, summed over the hosts that know them.
struct CpuTotals {
    double cpu_s = 0;
    double cpus = 0;
    bool known = false;
};
CpuTotals cpu_totals(const HostMap &hosts)
{
    CpuTotals t;
    for (const auto &[name, h] : hosts) {
        if (std::isnan(h.cpu_usage) || std::isnan(h.cpus))
            continue;
        t.cpu_s += h.cpu_usage;
        t.cpus += h.cpus;
        t.known = true;
    }
    return t;
}

struct GpuTotals {
    double sum = 0;
    uint64_t n = 0;
};
GpuTotals gpu_totals(const HostMap &hosts)
{
    GpuTotals t;
    for (const auto &[name, h] : hosts) {
        t.sum += h.gpu_utilisation_sum;
        t.n += h.gpu_utilisation_n;
    }
    return t;
}

void open_window(const HostMap &hosts, FlagState &state, int64_t now_ns)
{
    state.window_open = true;
    state.window_start_ns = now_ns;
    state.window_cpu_s = cpu_totals(hosts).cpu_s;
    GpuTotals g = gpu_totals(hosts);
    state.window_gpu_sum = g.sum;
    state.window_gpu_n = g.n;
}

}  // namespace

bool has_flag(const FlagState &state, std::string_view name)
{
    return std::any_of(state.raised.begin(), state.raised.end(), [&](const Flag &f) { return f.name == name; });
}

void check_window(const FlagRules &rules, const HostMap &hosts, FlagState &state, int64_t now_ns)
{
    if (!(rules.window_s > 0))
        return;
    if (!state.window_open) {
        open_window(hosts, state, now_ns);
        return;
    }
    const double elapsed = static_cast<double>(now_ns - state.window_start_ns) / k_ns;
    if (elapsed < rules.window_s)
        return;
    CpuTotals cpu = cpu_totals(hosts);
    if (rules.cpu_efficiency > 0 && cpu.known && cpu.cpus > 0) {
        const double efficiency = (cpu.cpu_s - state.window_cpu_s) / (cpu.cpus * elapsed);
        if (efficiency < rules.cpu_efficiency)
            raise(state, k_low_cpu,
                  "CPU efficiency " + percent(efficiency) + " over " + seconds(elapsed) + " (below " +
                      percent(rules.cpu_efficiency) + ")",
                  now_ns);
    }
    GpuTotals gpu = gpu_totals(hosts);
    if (rules.gpu_utilisation > 0 && gpu.n > state.window_gpu_n) {
        const double mean = (gpu.sum - state.window_gpu_sum) / static_cast<double>(gpu.n - state.window_gpu_n);
        if (mean < rules.gpu_utilisation)
            raise(state, k_gpu_idle,
                  "GPU utilisation " + percent(mean) + " on average over " + seconds(elapsed) + " (below " +
                      percent(rules.gpu_utilisation) + ")",
                  now_ns);
    }
    open_window(hosts, state, now_ns);
}

void check_silence(const FlagRules &rules, const HostMap &hosts, FlagState &state, int64_t now_mono_ns,
                   int64_t wall_now_ns)
{
    if (!(rules.silence_s > 0) || has_flag(state, k_stopped_sending))
        return;
    for (const auto &[name, h] : hosts) {
        if (!h.seen || h.ended || h.last_received_ns == 0)
            continue;
        const double limit = std::max(rules.silence_s, 3 * h.period_s);
        const double silent = static_cast<double>(now_mono_ns - h.last_received_ns) / k_ns;
        if (silent >= limit) {
            raise(state, k_stopped_sending,
                  "host " + name + " sent nothing for " + seconds(silent) + " before its job end (limit " +
                      seconds(limit) + ")",
                  wall_now_ns);
            return;
        }
    }
}

void check_end(const FlagRules &rules, const HostMap &hosts, const JobSummary &summary, FlagState &state)
{
    const int64_t when = summary.ended_ns;
    if (rules.cpu_efficiency > 0 && std::isfinite(summary.cpu_efficiency) && summary.duration_s >= rules.window_s &&
        summary.cpu_efficiency < rules.cpu_efficiency)
        raise(state, k_low_cpu,
              "CPU efficiency " + percent(summary.cpu_efficiency) + " over the whole job (" +
                  seconds(summary.duration_s) + ", below " + percent(rules.cpu_efficiency) + ")",
              when);
    if (rules.memory_fraction > 0) {
        for (const auto &[name, h] : hosts) {
            const double peak_mib = h.memory_peak / 1048576.0;
            if (std::isnan(h.memory_request_mib) || std::isnan(peak_mib) || h.memory_request_mib < rules.memory_min_mib)
                continue;
            if (peak_mib < rules.memory_fraction * h.memory_request_mib) {
                raise(state, k_memory_unused,
                      "host " + name + " used at most " + mib(peak_mib) + " of the " + mib(h.memory_request_mib) +
                          " asked for (" + percent(peak_mib / h.memory_request_mib) + ", below " +
                          percent(rules.memory_fraction) + ")",
                      when);
                break;
            }
        }
    }
    GpuTotals gpu = gpu_totals(hosts);
    if (rules.gpu_utilisation > 0 && gpu.n > 0 && summary.duration_s >= rules.window_s) {
        const double mean = gpu.sum / static_cast<double>(gpu.n);
        if (mean < rules.gpu_utilisation)
            raise(state, k_gpu_idle,
                  "GPU utilisation " + percent(mean) + " on average over the whole job (below " +
                      percent(rules.gpu_utilisation) + ")",
                  when);
    }
}

void check_unended(const FlagRules &rules, const JobSummary &summary, double silent_s, FlagState &state)
{
    if (!(rules.silence_s > 0) || summary.hosts_without_job_end == 0)
        return;
    raise(state, k_stopped_sending,
          "no job end from " + std::to_string(summary.hosts_without_job_end) + " of its " +
              std::to_string(summary.hosts) + " hosts after " + seconds(silent_s) + " of silence",
          summary.ended_ns);
}

}  // namespace colmet::collector::flags
