#include "collector/sinks/hdf5/JobAggregate.hpp"

#include "collector/sinks/hdf5/Hdf5Io.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace colmet::collector::hdf5 {

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

// The host group attributes the sink writes itself; meta keys never take
// these names.
constexpr std::array<std::string_view, 12> k_reserved{
    "hostname", "sender",  "samples_received", "samples_lost", "last_seq",         "rows_dropped",
    "first_ns", "last_ns", "job_start_ns",     "job_end_ns",   "overlapping_jobs", "tsdb_points_dropped"};

double parse_positive(const std::string &text)
{
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !(v > 0))
        return HostAggregate::k_unknown;
    return v;
}

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

herr_t collect_link(hid_t, const char *name, const H5L_info_t *, void *data)
{
    static_cast<std::vector<std::string> *>(data)->emplace_back(name);
    return 0;
}

Result<void> restore_backend(hid_t host_group, std::string_view backend, HostAggregate &host)
{
    auto group = open_group(host_group, object_name(backend));
    if (!group)
        return ok();  // this host never sent the backend
    for (int k = 0;; ++k) {
        auto seg = open_group(group->get(), "segment_" + std::to_string(k));
        if (!seg)
            break;
        auto names = read_strs_attr(seg->get(), "names");
        Dataset values{H5Dopen2(seg->get(), "values", H5P_DEFAULT)};
        if (!names || !values)
            continue;
        for (size_t col = 0; col < names->size(); ++col) {
            const std::string &metric = (*names)[col];
            auto r = read_column(values.get(), col, [&](const double *v, size_t n) {
                for (size_t i = 0; i < n; ++i)
                    observe_value(host, backend, metric, v[i]);
            });
            if (!r)
                return r.error();
        }
    }
    return ok();
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
            host.cpus = parse_positive(value);
        else if (key == "host_memory_mib")
            host.memory_request_mib = parse_positive(value);
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

std::string meta_attr_name(std::string_view key)
{
    std::string name = object_name(key);
    if (std::find(k_reserved.begin(), k_reserved.end(), name) != k_reserved.end())
        return "meta_" + name;
    return name;
}

Result<void> write_host_attrs(hid_t group, const std::string &hostname, const HostAggregate &host)
{
    std::vector<Result<void>> results;
    results.push_back(write_str_attr(group, "hostname", hostname));
    results.push_back(write_str_attr(group, "sender", host.sender));
    results.push_back(write_u64_attr(group, "samples_received", host.samples_received));
    results.push_back(write_u64_attr(group, "samples_lost", host.samples_lost));
    if (host.seq_known)
        results.push_back(write_u64_attr(group, "last_seq", host.last_seq));
    if (host.rows_dropped > 0 || attr_exists(group, "rows_dropped"))
        results.push_back(write_u64_attr(group, "rows_dropped", host.rows_dropped));
    if (host.tsdb_points_dropped > 0 || attr_exists(group, "tsdb_points_dropped"))
        results.push_back(write_u64_attr(group, "tsdb_points_dropped", host.tsdb_points_dropped));
    if (host.seen) {
        results.push_back(write_i64_attr(group, "first_ns", host.first_ns));
        results.push_back(write_i64_attr(group, "last_ns", host.last_ns));
    }
    if (host.started)
        results.push_back(write_i64_attr(group, "job_start_ns", host.job_start_ns));
    if (host.ended)
        results.push_back(write_i64_attr(group, "job_end_ns", host.job_end_ns));
    if (!host.overlapping_jobs.empty())
        results.push_back(
            write_strs_attr(group, "overlapping_jobs",
                            std::vector<std::string>(host.overlapping_jobs.begin(), host.overlapping_jobs.end())));
    for (const auto &[key, value] : host.pending_meta)
        results.push_back(write_str_attr(group, meta_attr_name(key).c_str(), value));
    for (auto &r : results)
        if (!r)
            return r;
    return ok();
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

Result<void> restore_hosts(hid_t file, HostMap &hosts)
{
    auto hosts_group = open_group(file, "hosts");
    if (!hosts_group)
        return ok();
    std::vector<std::string> names;
    hsize_t idx = 0;
    if (H5Literate(hosts_group->get(), H5_INDEX_NAME, H5_ITER_NATIVE, &idx, collect_link, &names) < 0)
        return h5_error("list /hosts");
    for (const auto &name : names) {
        auto group = open_group(hosts_group->get(), name);
        if (!group)
            continue;
        auto hostname = read_str_attr(group->get(), "hostname");
        if (!hostname)
            continue;
        hid_t g = group->get();
        HostAggregate &h = hosts[*hostname];
        if (auto v = read_str_attr(g, "sender"))
            h.sender = *v;
        if (auto v = read_i64_attr(g, "samples_received"))
            h.samples_received = static_cast<uint64_t>(*v);
        if (auto v = read_i64_attr(g, "samples_lost"))
            h.samples_lost = static_cast<uint64_t>(*v);
        if (auto v = read_i64_attr(g, "last_seq")) {
            h.seq_known = !h.sender.empty();
            h.last_seq = static_cast<uint64_t>(*v);
        }
        if (auto v = read_i64_attr(g, "rows_dropped"))
            h.rows_dropped = static_cast<uint64_t>(*v);
        if (auto v = read_i64_attr(g, "tsdb_points_dropped"))
            h.tsdb_points_dropped = static_cast<uint64_t>(*v);
        auto first = read_i64_attr(g, "first_ns");
        auto last = read_i64_attr(g, "last_ns");
        if (first && last) {
            h.seen = true;
            h.first_ns = *first;
            h.last_ns = *last;
        }
        if (auto v = read_i64_attr(g, "job_start_ns")) {
            h.started = true;
            h.job_start_ns = *v;
        }
        if (auto v = read_i64_attr(g, "job_end_ns")) {
            h.ended = true;
            h.job_end_ns = *v;
        }
        if (auto v = read_str_attr(g, meta_attr_name("cpus").c_str()))
            h.cpus = parse_positive(*v);
        if (auto v = read_str_attr(g, meta_attr_name("host_memory_mib").c_str()))
            h.memory_request_mib = parse_positive(*v);
        if (auto v = read_str_attr(g, meta_attr_name("cgroup_warning").c_str()))
            h.cgroup_warning = *v;
        if (auto v = read_strs_attr(g, "overlapping_jobs"))
            h.overlapping_jobs.insert(v->begin(), v->end());
        for (std::string_view backend :
             {"cgroup_cpu", "cgroup_memory", "cgroup_io", "processes", "rapl", "energy", "gpu"})
            if (auto r = restore_backend(g, backend, h); !r)
                return r.error().with_context("restore host " + *hostname);
    }
    return ok();
}

}  // namespace colmet::collector::hdf5
