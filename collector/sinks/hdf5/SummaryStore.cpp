#include "collector/sinks/hdf5/SummaryStore.hpp"

#include "collector/flags/WasteFlags.hpp"
#include "collector/sinks/hdf5/FileAccess.hpp"
#include "collector/sinks/hdf5/Hdf5Io.hpp"
#include "common/file_io.hpp"
#include "common/names.hpp"
#include "common/unique_fd.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace colmet::collector {

Result<JobSummary> read_job_summary(const std::filesystem::path &file)
{
    hdf5::ErrorSilencer silence;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        return Error(Errc::not_found, "no job file " + file.string());
    hdf5::PropList fapl = hdf5::file_access_plist();
    hdf5::File f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, fapl.get())};
    if (!f)
        return hdf5::h5_error("open " + file.string());
    auto job_id = hdf5::read_str_attr(f.get(), "job_id");
    if (!job_id)
        return job_id.error().with_context(file.string());
    auto group = hdf5::open_group(f.get(), "summary");
    if (!group)
        return Error(Errc::not_found, file.string() + " has no summary (the job has not ended)");
    JobSummary s;
    s.job_id = std::move(*job_id);
    s.file = file;
    for (const auto &f64 : k_summary_f64)
        if (auto v = hdf5::read_f64_attr(group->get(), f64.name))
            s.*f64.field = *v;
    for (const auto &u64 : k_summary_u64)
        if (auto v = hdf5::read_i64_attr(group->get(), u64.name))
            s.*u64.field = static_cast<uint64_t>(*v);
    for (const auto &i64 : k_summary_i64)
        if (auto v = hdf5::read_i64_attr(group->get(), i64.name))
            s.*i64.field = *v;
    if (auto v = hdf5::read_str_attr(group->get(), "cgroup_warning"))
        s.cgroup_warning = std::move(*v);
    hdf5::restore_flags(f.get(), s.flags);
    return s;
}

namespace hdf5 {

namespace {

// The host group attributes the sink writes itself; meta keys never take
// these names.
constexpr std::array<std::string_view, 12> k_reserved{
    "hostname", "sender",  "samples_received", "samples_lost", "last_seq",         "rows_dropped",
    "first_ns", "last_ns", "job_start_ns",     "job_end_ns",   "overlapping_jobs", "tsdb_points_dropped"};

herr_t collect_link(hid_t, const char *name, const H5L_info_t *, void *data)
{
    static_cast<std::vector<std::string> *>(data)->emplace_back(name);
    return 0;
}

// The summary's values of one backend group, scanned from its segments.
Result<void> restore_backend(hid_t backend_group, std::string_view backend, HostAggregate &host)
{
    const hid_t group = backend_group;
    for (int k = 0;; ++k) {
        auto seg = open_group(group, "segment_" + std::to_string(k));
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

// The summary's values of every backend group of a host that the summary
// uses (summary_backend). A backend group is named object_name(backend),
// which keeps the names summary_backend knows.
Result<void> restore_backends(hid_t host_group, HostAggregate &host)
{
    std::vector<std::string> names;
    hsize_t idx = 0;
    if (H5Literate(host_group, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, collect_link, &names) < 0)
        return h5_error("list backends");
    for (const auto &name : names) {
        if (!summary_backend(name))
            continue;
        auto group = open_group(host_group, name);
        if (!group)
            continue;
        if (auto r = restore_backend(group->get(), name, host); !r)
            return r.error();
    }
    return ok();
}

}  // namespace

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
            h.cpus = positive_or_unknown(*v);
        if (auto v = read_str_attr(g, meta_attr_name("host_memory_mib").c_str()))
            h.memory_request_mib = positive_or_unknown(*v);
        if (auto v = read_str_attr(g, meta_attr_name("cgroup_warning").c_str()))
            h.cgroup_warning = *v;
        if (auto v = read_strs_attr(g, "overlapping_jobs"))
            h.overlapping_jobs.insert(v->begin(), v->end());
        if (auto r = restore_backends(g, h); !r)
            return r.error().with_context("restore host " + *hostname);
    }
    return ok();
}

Result<void> write_summary(hid_t file, const JobSummary &summary)
{
    auto group = open_or_create_group(file, "summary");
    if (!group)
        return group.error();
    for (const auto &f64 : k_summary_f64)
        if (auto r = write_f64_attr(group->get(), f64.name, summary.*f64.field); !r)
            return r;
    for (const auto &u64 : k_summary_u64)
        if (auto r = write_u64_attr(group->get(), u64.name, summary.*u64.field); !r)
            return r;
    for (const auto &i64 : k_summary_i64)
        if (auto r = write_i64_attr(group->get(), i64.name, summary.*i64.field); !r)
            return r;
    if (!summary.cgroup_warning.empty())
        if (auto r = write_str_attr(group->get(), "cgroup_warning", summary.cgroup_warning); !r)
            return r;
    return write_flags(file, summary.flags);
}

void restore_flags(hid_t file, std::vector<JobFlag> &flags)
{
    auto group = open_group(file, "flags");
    if (!group)
        return;
    for (std::string_view name : flags::k_flag_names) {
        if (std::any_of(flags.begin(), flags.end(), [&](const JobFlag &f) { return f.name == name; }))
            continue;
        auto text = read_str_attr(group->get(), std::string(name).c_str());
        if (!text)
            continue;
        auto since = read_i64_attr(group->get(), (std::string(name) + "_since_ns").c_str());
        flags.push_back({std::string(name), std::move(*text), since ? *since : 0});
    }
}

Result<void> write_flags(hid_t file, const std::vector<JobFlag> &flags)
{
    if (flags.empty())
        return ok();
    auto group = open_or_create_group(file, "flags");
    if (!group)
        return group.error();
    for (const auto &flag : flags) {
        if (auto r = write_str_attr(group->get(), flag.name.c_str(), flag.text); !r)
            return r;
        if (auto r = write_i64_attr(group->get(), (flag.name + "_since_ns").c_str(), flag.since_ns); !r)
            return r;
    }
    return ok();
}

Result<void> write_summary_file(const std::filesystem::path &path, const JobSummary &summary, const std::string &reader)
{
    // A short name of its own (a job's stem may fill NAME_MAX), hidden, one
    // per job: <dir>/.<16 hex digits of fnv1a64(name)>.json.tmp.
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(path.filename().native())));
    AtomicWrite how;
    how.mode = 0666 & ~k_job_file_umask;
    how.tmp = path.parent_path() / ("." + std::string(hash) + ".json.tmp");
    if (!reader.empty())
        how.before_rename = [&reader](const std::filesystem::path &tmp) -> Result<void> {
            if (auto r = grant_read(tmp, reader);
                !r && r.error().code() != Errc::not_found && r.error().code() != Errc::unsupported)
                return r;
            return ok();
        };
    return write_file_atomic(path, summary_json(summary, reader), how);
}

}  // namespace hdf5

}  // namespace colmet::collector
