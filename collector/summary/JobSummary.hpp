// The per-job summary: its numbers (one table for every output), the JSON
// that on-job-end commands read and that the HDF5 sink leaves beside each
// job's file (<stem>.json, read by colmet-job), and its reader. No HDF5
// here. docs/hdf5-layout.md describes every field.
#pragma once

#include "common/result.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::collector {

// A waste flag raised for the job (collector/flags/WasteFlags.hpp): stored
// in the file's /flags, sent as a point, given to on-job-end.
struct JobFlag {
    std::string name;      // low_cpu_efficiency, memory_unused, gpu_idle, stopped_sending
    std::string text;      // why, with its numbers
    int64_t since_ns = 0;  // when it was raised (ns since the epoch)
    bool operator==(const JobFlag &) const = default;
};

struct JobSummary {
    static constexpr double k_unknown = std::numeric_limits<double>::quiet_NaN();

    std::string job_id;                    // the original id (root attribute job_id)
    std::filesystem::path file;            // the file it was read from (empty when computed)
    double duration_s = k_unknown;         // earliest message of any host .. latest job_end
    double cpu_time_s = k_unknown;         // cgroup_cpu usage, last value per host, summed
    double user_time_s = k_unknown;        // cgroup_cpu user
    double system_time_s = k_unknown;      // cgroup_cpu system
    double cpus = k_unknown;               // CPUs allocated (job_start meta "cpus"), summed over hosts
    double cpu_efficiency = k_unknown;     // cpu_time / (duration * cpus)
    double peak_memory_bytes = k_unknown;  // cgroup_memory peak (or current), max over samples and hosts
    double read_bytes = k_unknown;         // cgroup_io read_bytes, last value per host, summed
    double write_bytes = k_unknown;        // cgroup_io write_bytes
    double read_chars = k_unknown;         // processes read_chars, last value per host, summed
    double write_chars = k_unknown;        // processes write_chars
    double energy_j = k_unknown;           // rapl (node scope) package + dram energy over the job, summed over hosts
    double job_energy_j = k_unknown;       // the job's share of it (backend energy), summed over hosts
    uint64_t samples_received = 0;         // messages stored (job_start, sample, job_end), all hosts
    uint64_t samples_lost = 0;             // messages known lost (sequence gaps, sender drops)
    uint64_t rows_dropped = 0;             // rows received but not stored (disk full, memory budget, write errors)
    uint64_t tsdb_points_dropped = 0;      // points the time-series sink queued but could not deliver
    uint64_t hosts = 0;
    // Hosts whose job_end never arrived: 0 once the job ended everywhere;
    // more when the summary was written after --idle-close seconds of
    // silence from what arrived (incomplete), or at one host's job_end
    // while others still run.
    uint64_t hosts_without_job_end = 0;
    int64_t started_ns = 0;  // start of the duration (ns since the epoch)
    int64_t ended_ns = 0;    // end of the duration (latest job_end)
    // Empty unless a sampler found that a cgroup directory it read held none
    // of the job's processes ("<host>: " before each when several hosts).
    std::string cgroup_warning;
    // The waste flags raised for the job, in the order they were raised.
    std::vector<JobFlag> flags;
};

// The fields of the summary by type. name: the /summary attribute and the
// JSON key; metric: the time-series sink's colmet_job_<metric> (Prometheus
// units).
struct SummaryF64Field {
    const char *name;
    const char *metric;
    double JobSummary::*field;
};

inline constexpr std::array<SummaryF64Field, 13> k_summary_f64{{
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

struct SummaryU64Field {
    const char *name;
    const char *metric;
    uint64_t JobSummary::*field;
};

inline constexpr std::array<SummaryU64Field, 6> k_summary_u64{{
    {"samples_received", "samples_received", &JobSummary::samples_received},
    {"samples_lost", "samples_lost", &JobSummary::samples_lost},
    {"rows_dropped", "rows_dropped", &JobSummary::rows_dropped},
    {"tsdb_points_dropped", "tsdb_points_dropped", &JobSummary::tsdb_points_dropped},
    {"hosts", "hosts", &JobSummary::hosts},
    {"hosts_without_job_end", "hosts_without_job_end", &JobSummary::hosts_without_job_end},
}};

struct SummaryI64Field {
    const char *name;
    int64_t JobSummary::*field;
};

inline constexpr std::array<SummaryI64Field, 2> k_summary_i64{{
    {"started_ns", &JobSummary::started_ns},
    {"ended_ns", &JobSummary::ended_ns},
}};

// The summary's numbers, one row a field, in one table for every output:
// the /summary attribute (duration_s) and the time-series sink's metric,
// colmet_job_<metric> (duration_seconds). NaN where unknown.
struct SummaryNumber {
    const char *attribute;
    const char *metric;
    double value;
};
std::vector<SummaryNumber> summary_numbers(const JobSummary &summary);

// The summary as the JSON object on-job-end commands read (colmet-collector(8),
// "On job end"): job_id, user (null when unknown), file, complete (every
// host sent its job_end), summary (the numbers above, NaN as null, and
// started_ns, ended_ns), flags (a list of {name, text, since_ns}, empty
// when none was raised) and cgroup_warning when there is one.
std::string summary_json(const JobSummary &summary, std::string_view user);

// The summary from summary_json's text (user is not kept). Errc::invalid
// when the text is not such an object; unknown keys are ignored.
Result<JobSummary> parse_summary_json(std::string_view text);

// Read the summary a job's <stem>.json holds (job_file(dir, id,
// JobFile::summary), written by the HDF5 sink). Errc::not_found when it does
// not exist (yet): the job has not ended, or no HDF5 sink writes the job.
Result<JobSummary> read_summary_file(const std::filesystem::path &path);

}  // namespace colmet::collector
