// Putting a task of a sampled job into the cgroups colmet measures
// (slurm_spank_task_init_privileged, cgroup v1 only).
//
// Slurm never creates perf_event cgroups, so every task is written into the
// job's (or step's) directory of the perf_event hierarchy that colmet-job
// created: that is where the sampler finds the job's processes, and through
// them the directories Slurm put them in. In the other hierarchies colmet-job
// makes the job's directories only when Slurm keeps no cgroups of its own
// (proctrack/linuxproc, task/none), and only then is the task written there;
// a directory colmet did not make is never a target, and a task that Slurm
// already placed within the job's directory in a hierarchy is left alone.
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

// The cgroup.procs files to write the task into: per hierarchy, the deepest
// existing directory of step_rel (when given) and job_rel, skipped when the
// task is already within job_rel there.
std::vector<std::filesystem::path> attach_targets(const std::vector<CgroupMount> &mounts, std::string_view proc_cgroup,
                                                  const std::string &job_rel,
                                                  const std::optional<std::string> &step_rel);

// Write pid into every target; returns the first error (after trying all).
Result<void> attach_pid(const std::vector<std::filesystem::path> &targets, pid_t pid);

}  // namespace colmet::spank
