// What colmet-job start leaves in the run directory (/run/colmet/<job>.pid)
// for colmet-job stop and status: the sampler's pid and how it was started.
//
// The file is "key=value" lines; the first line is "pid=N" so that tools
// which only want the pid (pkill -F does not parse it, but head -1 | cut
// does) find it first.
#pragma once

#include "common/result.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace colmet::job {

struct SamplerRecord {
    pid_t pid = 0;
    uint64_t start_ticks = 0;  // /proc/<pid>/stat starttime: tells a reused pid apart
    std::string job_id;
    std::string user;
    std::string cgroup;       // relative job cgroup ("/oar/alice_42")
    std::string cgroup_root;  // where the hierarchies are mounted
    double period_s = 0;
    std::string collector;  // ZeroMQ URI
    std::string spec;       // canonical spec in force ("" = site defaults)
    std::string log_file;
    std::string perf_root;             // perf_event hierarchy root ("" = none)
    bool perf_cgroup_created = false;  // stop removes <perf_root>/<cgroup>
    bool job_cgroup_created = false;   // --create-cgroup made the job's directories
    // With job_cgroup_created: the topmost ancestor of `cgroup` that existed
    // in no hierarchy before start ("/slurm/uid_0"); "" = only the job's own
    // directory was made. stop also removes the empty levels up to it.
    std::string created_from;
    int64_t started_ns = 0;  // CLOCK_REALTIME
};

// job_file(run_dir, job_id, JobFile::sampler_record): <run_dir>/<stem>.pid (common/names.hpp)
std::filesystem::path record_path(const std::filesystem::path &run_dir, const std::string &job_id);

// Written to a temporary file and renamed into place (mode 0644): a reader
// never sees half a record.
Result<void> write_record(const std::filesystem::path &path, const SamplerRecord &record);
Result<SamplerRecord> read_record(const std::filesystem::path &path);

// Every *.pid file of the run directory (a missing directory is empty),
// sorted by name; unreadable files come back as errors.
std::vector<std::pair<std::filesystem::path, Result<SamplerRecord>>> list_records(const std::filesystem::path &run_dir);

// starttime of a live process (0 when it does not exist or is a zombie).
uint64_t process_start_ticks(pid_t pid, const std::filesystem::path &proc_root = "/proc");

// True when the record's process is alive and is the same process (same
// start time) — not a later process that reused the pid.
bool sampler_alive(const SamplerRecord &record, const std::filesystem::path &proc_root = "/proc");

}  // namespace colmet::job
