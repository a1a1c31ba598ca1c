// Putting a task of a sampled job into the cgroups colmet measures
// (slurm_spank_task_init_privileged, cgroup v1 only).
//
// Slurm never creates perf_event cgroups, so every task is written into the
// job's (or step's) directory of the perf_event hierarchy that colmet-job
// created. The same is done for the cpu, cpuacct, memory, blkio and pids
// hierarchies when Slurm did not already place the task inside the job's
// cgroup there (proctrack/linuxproc, task/none): with Slurm's cgroup plugins
// the task is already below /slurm/uid_<uid>/job_<job> and is left alone.
// On cgroup v2 Slurm's own job cgroup is used and nothing is moved.
#pragma once

#include "common/result.hpp"

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::spank {

struct CgroupMount {
    std::filesystem::path mount_point;
    std::vector<std::string> controllers;  // e.g. {"cpu", "cpuacct"}
};

// cgroup v1 hierarchies mounted under cgroup_root, from /proc/self/mountinfo
// text, keeping those that hold one of colmet's controllers.
std::vector<CgroupMount> colmet_v1_mounts(std::string_view mountinfo, const std::filesystem::path &cgroup_root);

// The process's path in the v1 hierarchy with exactly these controllers, from
// /proc/<pid>/cgroup text ("4:cpu,cpuacct:/slurm/uid_0/job_1").
std::optional<std::string> current_cgroup(std::string_view proc_cgroup, const std::vector<std::string> &controllers);

// True when path is rel or below it ("/a/b" is below "/a", "/ab" is not).
bool is_within(std::string_view path, std::string_view rel);

// The cgroup.procs files to write the task into: per hierarchy, the deepest
// existing directory of step_rel (when given) and job_rel, skipped when the
// task is already within job_rel there.
std::vector<std::filesystem::path> attach_targets(const std::vector<CgroupMount> &mounts, std::string_view proc_cgroup,
                                                  const std::string &job_rel, const std::optional<std::string> &step_rel);

// Write pid into every target; returns the first error (after trying all).
Result<void> attach_pid(const std::vector<std::filesystem::path> &targets, pid_t pid);

} // namespace colmet::spank
