#include "collector/sinks/hdf5/JobSummary.hpp"

#include "collector/flags/WasteFlags.hpp"

#include "collector/sinks/hdf5/Hdf5Io.hpp"
#include "collector/sinks/hdf5/JobAggregate.hpp"
#include "common/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <system_error>

namespace colmet::collector {

namespace {

// name: the /summary attribute; metric: the time-series sink's
// colmet_job_<metric> (Prometheus units).
struct F64Field {
    const char *name;
    const char *metric;
    double JobSummary::*field;
};

constexpr std::array<F64Field, 13> k_f64_fields{{
    {"duration_s", "duration_seconds", &JobSummary::duration_s},
    {"cpu_time_s", "cpu_time_seconds", &JobSummary::cpu_time_s},
    {"user_time_s", "user_time_seconds", &JobSummary::user_time_s},
    {"system_time_s", "system_time_seconds", &JobSummary::system_time_s},
    {"cpus", "cpus", &JobSummary::cpus},
    {"cpu_efficiency", "cpu_efficiency_ratio", &JobSummary::cpu_efficiency},
    {"peak_memory_bytes", "peak_memory_bytes", &JobSummary::peak_memory_bytes},
    {"read_bytes", "read_bytes", &JobSummary::read_bytes},
    {"write_bytes", "write_bytes", &JobSummary::write_bytes},
    {"read_chars", "read_chars_bytes", &JobSummary::read_chars},
    {"write_chars", "write_chars_bytes", &JobSummary::write_chars},
    {"energy_j", "energy_joules", &JobSummary::energy_j},
    {"job_energy_j", "job_energy_joules", &JobSummary::job_energy_j},
}};

struct U64Field {
    const char *name;
    const char *metric;
    uint64_t JobSummary::*field;
};

constexpr std::array<U64Field, 6> k_u64_fields{{
    {"samples_received", "samples_received", &JobSummary::samples_received},
    {"samples_lost", "samples_lost", &JobSummary::samples_lost},
    {"rows_dropped", "rows_dropped", &JobSummary::rows_dropped},
    {"tsdb_points_dropped", "tsdb_points_dropped", &JobSummary::tsdb_points_dropped},
    {"hosts", "hosts", &JobSummary::hosts},
    {"hosts_without_job_end", "hosts_without_job_end", &JobSummary::hosts_without_job_end},
}};

struct I64Field {
    const char *name;
    int64_t JobSummary::*field;
};

constexpr std::array<I64Field, 2> k_i64_fields{{
    {"started_ns", &JobSummary::started_ns},
    {"ended_ns", &JobSummary::ended_ns},
}};

}  // namespace

std::vector<SummaryNumber> summary_numbers(const JobSummary &s)
{
    std::vector<SummaryNumber> out;
    out.reserve(k_f64_fields.size() + k_u64_fields.size());
    for (const auto &f : k_f64_fields)
        out.push_back({f.name, f.metric, s.*f.field});
    for (const auto &f : k_u64_fields)
        out.push_back({f.name, f.metric, static_cast<double>(s.*f.field)});
    return out;
}

std::string summary_json(const JobSummary &s, std::string_view user)
{
    nlohmann::json numbers = nlohmann::json::object();
    for (const auto &f : k_f64_fields) {
        const double v = s.*f.field;
        numbers[f.name] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    }
    for (const auto &f : k_u64_fields)
        numbers[f.name] = s.*f.field;
    for (const auto &f : k_i64_fields)
        numbers[f.name] = s.*f.field;
    nlohmann::json out = {
        {"job_id", s.job_id},
        {"user", user.empty() ? nlohmann::json(nullptr) : nlohmann::json(user)},
        {"file", s.file.string()},
        {"complete", s.hosts_without_job_end == 0},
        {"summary", std::move(numbers)},
    };
    nlohmann::json flags = nlohmann::json::array();
    for (const auto &f : s.flags)
        flags.push_back({{"name", f.name}, {"text", f.text}, {"since_ns", f.since_ns}});
    out["flags"] = std::move(flags);
    if (!s.cgroup_warning.empty())
        out["cgroup_warning"] = s.cgroup_warning;
    // Bytes that are not UTF-8 (a job id is any printable text, a user name
    // any bytes) are replaced, never refused.
    return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::filesystem::path job_file_path(const std::filesystem::path &dir, std::string_view job_id)
{
    return job_file(dir, job_id, JobFile::data);
}

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
    for (const auto &f64 : k_f64_fields)
        if (auto v = hdf5::read_f64_attr(group->get(), f64.name))
            s.*f64.field = *v;
    for (const auto &u64 : k_u64_fields)
        if (auto v = hdf5::read_i64_attr(group->get(), u64.name))
            s.*u64.field = static_cast<uint64_t>(*v);
    for (const auto &i64 : k_i64_fields)
        if (auto v = hdf5::read_i64_attr(group->get(), i64.name))
            s.*i64.field = *v;
    if (auto v = hdf5::read_str_attr(group->get(), "cgroup_warning"))
        s.cgroup_warning = std::move(*v);
    hdf5::restore_flags(f.get(), s.flags);
    return s;
}

namespace hdf5 {

Result<void> write_summary(hid_t file, const JobSummary &summary)
{
    auto group = open_or_create_group(file, "summary");
    if (!group)
        return group.error();
    for (const auto &f64 : k_f64_fields)
        if (auto r = write_f64_attr(group->get(), f64.name, summary.*f64.field); !r)
            return r;
    for (const auto &u64 : k_u64_fields)
        if (auto r = write_u64_attr(group->get(), u64.name, summary.*u64.field); !r)
            return r;
    for (const auto &i64 : k_i64_fields)
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

}  // namespace hdf5

}  // namespace colmet::collector
