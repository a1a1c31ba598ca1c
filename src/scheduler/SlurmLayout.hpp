// Slurm's facts colmet depends on, in one place: how a sampler of a job or
// of one of its steps is named, the level that names the job's directory in
// every cgroup layout Slurm 22.05 makes (v1 /slurm or /slurm_<node> prefix,
// v2 system.slice/[<node>_]slurmstepd.scope), colmet's own perf_event
// directory (Slurm never makes one), and whether Slurm keeps cgroups of its
// own on this node. Pure functions over a root, no logging: colmet-job and
// the SPANK plugin (which links nothing of colmet's) both compile this.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::sched::slurm {

// The sampler of a whole job ("123") or of one step ("123.4").
struct SamplerRef {
    uint32_t job = 0;
    std::optional<uint32_t> step;
};

std::string sampler_id(const SamplerRef &ref);
// "123" or "123.4" (decimal, no sign, no leading '+'); nullopt otherwise.
std::optional<SamplerRef> parse_sampler_id(std::string_view id);

// The last components of the job's (or step's) directory in every layout:
// "job_123" or "job_123/step_4".
std::string level(const SamplerRef &ref);

// colmet's perf_event directory on cgroup v1, relative to the hierarchy:
// /slurm/uid_<uid>/job_<job>[/step_<step>].
std::string perf_cgroup(uid_t uid, const SamplerRef &ref);

// Slurm's own directory on cgroup v2: system.slice/<node>_slurmstepd.scope
// (Debian's multiple-slurmd build) or system.slice/slurmstepd.scope, + job_<job>
// [/step_<step>]; the one that exists under `root`, else the one whose scope
// exists, else the plain one. Relative to the root, with a leading '/'.
std::string v2_cgroup(const std::filesystem::path &root, const SamplerRef &ref);

// On cgroup v2 Slurm runs each step's daemon (slurmstepd) inside the job's
// directory, in step_<n>/slurm, and the tasks in step_<n>/user: the leaves
// of the job's (or step's) directory that hold its tasks, "step_*/user" or
// "user" (colmet-node --cgroup-leaves).
std::vector<std::string> v2_task_leaves(const SamplerRef &ref);

// Whether Slurm keeps cgroups of its own on this cgroup v1 node: the first
// top-level slurm or slurm_<name> directory of a hierarchy other than
// perf_event (slurmd makes it at start when a cgroup plugin is configured)
// that is not in `made_by_colmet` (top-level levels colmet created itself
// for schedulers without cgroups, e.g. "/slurm"); nullopt when there is none.
std::optional<std::filesystem::path> manages_cgroups(const std::filesystem::path &root,
                                                     const std::vector<std::string> &made_by_colmet);

}  // namespace colmet::sched::slurm
