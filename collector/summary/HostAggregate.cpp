#include "collector/summary/HostAggregate.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace colmet::collector {

namespace {

enum class Rule { last, max };

struct Tracked {
    std::string_view backend;
    std::string_view metric;
    double HostAggregate::*field;
    Rule rule;
};

// Grouped by backend (observe_message relies on it).
constexpr std::array<Tracked, 9> k_tracked{{
    {"cgroup_cpu", "usage", &HostAggregate::cpu_usage, Rule::last},
    {"cgroup_cpu", "user", &HostAggregate::cpu_user, Rule::last},
    {"cgroup_cpu", "system", &HostAggregate::cpu_system, Rule::last},
    {"cgroup_memory", "peak", &HostAggregate::memory_peak, Rule::max},
    {"cgroup_memory", "current", &HostAggregate::memory_current, Rule::max},
    {"cgroup_io", "read_bytes", &HostAggregate::io_read_bytes, Rule::last},
    {"cgroup_io", "write_bytes", &HostAggregate::io_write_bytes, Rule::last},
    {"processes", "read_chars", &HostAggregate::read_chars, Rule::last},
    {"processes", "write_chars", &HostAggregate::write_chars, Rule::last},
}};

void track(HostAggregate &host, const Tracked &t, double value)
{
    if (std::isnan(value))
        return;
    double &field = host.*t.field;
    if (t.rule == Rule::last || std::isnan(field) || value > field)
        field = value;
}

}  // namespace

double positive_or_unknown(const std::string &text)
{
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !(v > 0))
        return HostAggregate::k_unknown;
    return v;
}

namespace {

// Sum of the known values; NaN when none is known.
double sum_known(const HostMap &hosts, double HostAggregate::*field)
{
    double sum = HostAggregate::k_unknown;
    for (const auto &[name, host] : hosts) {
        double v = host.*field;
        if (!std::isnan(v))
            sum = std::isnan(sum) ? v : sum + v;
    }
    return sum;
}

}  // namespace

bool summary_backend(std::string_view backend)
{
    if (backend == "rapl" || backend == "energy" || backend == "gpu")
        return true;
    return std::any_of(k_tracked.begin(), k_tracked.end(), [&](const Tracked &t) { return t.backend == backend; });
}

void observe_value(HostAggregate &host, std::string_view backend, std::string_view metric, double value)
{
    if (std::isnan(value))
        return;
    if (backend == "gpu") {
        // gpuN_utilisation, not gpuN_memory_utilisation.
        if (metric.ends_with("_utilisation") && !metric.ends_with("_memory_utilisation") && value >= 0) {
            host.gpu_utilisation_sum += value;
            ++host.gpu_utilisation_n;
        }
        return;
    }
    const bool share = backend == "energy" && (metric.ends_with("_package") || metric.ends_with("_dram") ||
                                               metric.ends_with("_core") || metric.starts_with("psys"));
    if (backend == "rapl" || share) {
        auto &energies = share ? host.job_energy : host.rapl;
        auto it = energies.find(metric);
        if (it == energies.end())
            it = energies.emplace(std::string(metric), HostAggregate::Energy{}).first;
        auto &e = it->second;
        if (!std::isnan(e.last))
            e.total += value >= e.last ? value - e.last : value;
        e.last = value;
        return;
    }
    for (const auto &t : k_tracked)
        if (t.backend == backend && t.metric == metric)
            track(host, t, value);
}

SequenceCheck check_sequence(const HostAggregate &host, const wire::Message &msg, bool sender_new)
{
    if (!host.seq_known || host.sender != msg.sender) {
        // Nothing stored of this sender (a new host, a restarted sampler, a
        // file never flushed before the collector died). Its seq counts from
        // 0 (docs/protocol.md): the messages before this one never arrived
        // here, unless the core saw them.
        return {.gap = sender_new ? msg.seq : 0};
    }
    if (msg.seq <= host.last_seq)
        return {.duplicate = true};
    return {.gap = sender_new ? msg.seq - host.last_seq - 1 : 0};
}

OrderCheck check_order(HostAggregate &host, const wire::Message &msg)
{
    const bool same = host.seq_known && host.sender == msg.sender;
    uint64_t expected = same ? host.last_seq + 1 : 0;
    OrderCheck out;
    host.acked = true;
    if (msg.seq < expected) {
        out.order = Order::duplicate;
        return out;
    }
    if (msg.base > expected) {
        out.given_up = msg.base - expected;
        host.samples_lost += out.given_up;
        host.last_seq = msg.base - 1;
        host.seq_known = true;
        host.sender = msg.sender;
        host.dirty = true;
        expected = msg.base;
    }
    out.order = msg.seq == expected ? Order::store : Order::wait;
    return out;
}

void observe_message(HostAggregate &host, const wire::Message &msg, uint64_t lost)
{
    const int64_t t = msg.time_ns;
    host.first_ns = host.seen ? std::min(host.first_ns, t) : t;
    host.last_ns = host.seen ? std::max(host.last_ns, t) : t;
    host.seen = true;
    ++host.samples_received;  // every message is one row: job_start and job_end carry values too
    host.samples_lost += lost;
    if (!host.seq_known || host.sender != msg.sender)
        host.last_seq = msg.seq;
    else
        host.last_seq = std::max(host.last_seq, msg.seq);
    host.seq_known = true;
    host.sender = msg.sender;
    if (msg.kind == wire::MessageKind::job_start) {
        host.started = true;
        host.job_start_ns = t;
    }
    // Metadata comes with job_start, and later when the sampler learns more
    // (the job's cgroups once found from its processes, a warning).
    for (const auto &[key, value] : msg.meta) {
        host.pending_meta.emplace_back(key, value);
        if (key == "cpus")
            host.cpus = positive_or_unknown(value);
        else if (key == "host_memory_mib")
            host.memory_request_mib = positive_or_unknown(value);
        else if (key == "cgroup_warning")
            host.cgroup_warning = value;
    }
    if (std::isfinite(msg.period_s) && msg.period_s > 0)
        host.period_s = msg.period_s;
    if (msg.kind == wire::MessageKind::job_end) {
        host.ended = true;
        host.job_end_ns = t;
    }
    for (const auto &block : msg.backends) {
        const size_t n = std::min(block.metrics.size(), block.values.size());
        if (block.name == "rapl" || block.name == "energy" || block.name == "gpu") {
            for (size_t i = 0; i < n; ++i)
                observe_value(host, block.name, block.metrics[i].name, block.values[i]);
            continue;
        }
        // The few tracked metrics of this backend, if any (k_tracked is
        // grouped by backend).
        auto first =
            std::find_if(k_tracked.begin(), k_tracked.end(), [&](const Tracked &x) { return x.backend == block.name; });
        if (first == k_tracked.end())
            continue;
        auto last = std::find_if(first, k_tracked.end(), [&](const Tracked &x) { return x.backend != block.name; });
        for (size_t i = 0; i < n; ++i)
            for (auto k = first; k != last; ++k)
                if (k->metric == block.metrics[i].name)
                    track(host, *k, block.values[i]);
    }
    host.dirty = true;
}

static double energy_sum_j(const std::map<std::string, HostAggregate::Energy, std::less<>> &energies)
{
    double sum = HostAggregate::k_unknown;
    auto add = [&](double v) { sum = std::isnan(sum) ? v : sum + v; };
    for (const auto &[metric, e] : energies)
        if (metric.ends_with("_package") || metric.ends_with("_dram"))
            add(e.total);
    if (std::isnan(sum))
        for (const auto &[metric, e] : energies)
            if (metric.starts_with("psys"))
                add(e.total);
    return sum;
}

double host_energy_j(const HostAggregate &host) { return energy_sum_j(host.rapl); }

JobSummary summarize(const std::string &job_id, const HostMap &hosts)
{
    JobSummary s;
    s.job_id = job_id;
    s.hosts = hosts.size();
    bool any_seen = false, any_ended = false;
    double cpus = hosts.empty() ? HostAggregate::k_unknown : 0;
    for (const auto &[name, h] : hosts) {
        s.samples_received += h.samples_received;
        s.samples_lost += h.samples_lost;
        s.rows_dropped += h.rows_dropped;
        s.tsdb_points_dropped += h.tsdb_points_dropped;
        cpus += h.cpus;  // NaN as soon as one host's CPU count is unknown
        if (h.seen) {
            int64_t first = h.started ? std::min(h.first_ns, h.job_start_ns) : h.first_ns;
            s.started_ns = any_seen ? std::min(s.started_ns, first) : first;
            if (!any_ended)
                s.ended_ns = any_seen ? std::max(s.ended_ns, h.last_ns) : h.last_ns;
            any_seen = true;
        }
        if (h.ended) {
            s.ended_ns = any_ended ? std::max(s.ended_ns, h.job_end_ns) : h.job_end_ns;
            any_ended = true;
        } else {
            ++s.hosts_without_job_end;
        }
        if (!h.cgroup_warning.empty())
            s.cgroup_warning +=
                (s.cgroup_warning.empty() ? "" : "; ") + (hosts.size() > 1 ? name + ": " : "") + h.cgroup_warning;
        if (double e = host_energy_j(h); !std::isnan(e))
            s.energy_j = std::isnan(s.energy_j) ? e : s.energy_j + e;
        if (double e = energy_sum_j(h.job_energy); !std::isnan(e))
            s.job_energy_j = std::isnan(s.job_energy_j) ? e : s.job_energy_j + e;
        double peak = std::isnan(h.memory_peak) ? h.memory_current : h.memory_peak;
        if (!std::isnan(peak) && (std::isnan(s.peak_memory_bytes) || peak > s.peak_memory_bytes))
            s.peak_memory_bytes = peak;
    }
    if (any_seen)
        s.duration_s = static_cast<double>(s.ended_ns - s.started_ns) / 1e9;
    s.cpus = cpus;
    s.cpu_time_s = sum_known(hosts, &HostAggregate::cpu_usage);
    s.user_time_s = sum_known(hosts, &HostAggregate::cpu_user);
    s.system_time_s = sum_known(hosts, &HostAggregate::cpu_system);
    s.read_bytes = sum_known(hosts, &HostAggregate::io_read_bytes);
    s.write_bytes = sum_known(hosts, &HostAggregate::io_write_bytes);
    s.read_chars = sum_known(hosts, &HostAggregate::read_chars);
    s.write_chars = sum_known(hosts, &HostAggregate::write_chars);
    if (s.duration_s > 0 && cpus > 0)
        s.cpu_efficiency = s.cpu_time_s / (s.duration_s * cpus);
    return s;
}

size_t host_heap_bytes(const HostAggregate &host)
{
    constexpr size_t k_node = k_set_entry_bytes;
    auto heap = [](const std::string &s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
    size_t bytes = heap(host.sender) + heap(host.cgroup_warning);
    for (const auto &energies : {&host.rapl, &host.job_energy})
        for (const auto &[metric, energy] : *energies)
            bytes += k_node + sizeof(energy) + heap(metric);
    for (const auto &job : host.overlapping_jobs)
        bytes += k_node + heap(job);
    for (const auto &[key, value] : host.pending_meta)
        bytes += k_node + heap(key) + heap(value);
    return bytes;
}

}  // namespace colmet::collector
