// What colmet-job start and stop share: logging for hook mode and the
// cleanup of the cgroups a start created.
#pragma once

#include "common/result.hpp"
#include "job/SamplerRecord.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace colmet::job {

// Log to log_file (its directory is created) and, outside hook mode, to
// stderr as well. Info lines are always kept: they are the admin's record of
// what the hook did.
void setup_command_log(const std::string &log_file, bool hook, int verbosity);

// Undo what start created for a job: the perf_event cgroup (its processes
// moved back to the hierarchy root first) and, with --create-cgroup, the
// job's own empty directories and the empty levels above them that start
// made (record.created_from), except a level that is, or holds, the cgroup
// of another job recorded in run_dir. Problems are logged; the first is
// returned.
Result<void> remove_created_cgroups(const SamplerRecord &record, const std::filesystem::path &run_dir);

// True when the cgroup path `path` lies strictly below `level`
// ("/slurm/uid_0/job_1" is below "/slurm", not below "/slur").
bool cgroup_below(std::string_view path, std::string_view level);

}  // namespace colmet::job
