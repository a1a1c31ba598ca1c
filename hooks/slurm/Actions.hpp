// What the plugin does in each SPANK callback, written against plain data so
// that it can be tested without Slurm. spank_colmet.cpp gathers the data
// from Slurm and calls these; they never throw on purpose and never fail a
// job: problems are logged and monitoring is skipped.
#pragma once

#include "HelperCommand.hpp"
#include "PluginConfig.hpp"
#include "SpecCheck.hpp"

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

namespace colmet::spank {

// Where messages go (slurm_info / slurm_error / slurm_debug in the plugin).
// Every message already starts with "colmet: ".
struct Log {
    std::function<void(const std::string &)> info;
    std::function<void(const std::string &)> error;
    std::function<void(const std::string &)> debug;
};

// Whether the job is sampled: --colmet (not =off) asks for it; in mode=all
// every job is, unless it said --colmet=off. `option` is empty when the job
// did not use --colmet at all.
bool job_wanted(const PluginConfig &c, const std::optional<UserChoice> &option);

// slurm_spank_job_prolog: marker + colmet-job start for the whole job.
void job_prolog(const PluginConfig &c, const JobRef &job, const std::optional<UserChoice> &option, const Log &log);

// slurm_spank_job_epilog: colmet-job stop for the job and any step sampler
// left behind, marker removed.
void job_epilog(const PluginConfig &c, uint32_t job_id, const Log &log);

// State kept in slurmstepd between init_post_opt, task_init_privileged and exit.
struct StepState {
    bool job_sampled = false;   // the job prolog started a sampler (marker present)
    bool step_sampler = false;  // this step has its own sampler
    bool v2 = false;
    std::string job_rel;   // the job's cgroup, relative to the hierarchies
    std::string step_rel;  // the step's
    std::string step_id;   // "<job>.<step>"
    uint32_t job_id = 0;
    uint32_t local_tasks = 0;  // tasks of this step on this node (0: unknown)
    uint32_t exited_tasks = 0;
    bool step_stopped = false;  // the step's sampler was stopped at its last task's exit
};

// slurm_spank_init_post_opt in slurmstepd: start the step's sampler when the
// job is sampled (marker) or the step asked with --colmet.
StepState step_start(const PluginConfig &c, const JobRef &job, uint32_t step_id,
                     const std::optional<UserChoice> &option, const Log &log);

// slurm_spank_task_init_privileged: put the task (pid) into colmet's cgroups.
// mountinfo and proc_cgroup are /proc/self/{mountinfo,cgroup}.
void task_attach(const StepState &s, pid_t pid, const std::string &mountinfo, const std::string &proc_cgroup,
                 const PluginConfig &c, const Log &log);

// slurm_spank_task_exit: when the step's last task on this node has exited,
// and before Slurm removes the step's cgroups (and, after its last step, the
// job's), the step's sampler takes its final sample (colmet-job stop) and the
// job's sampler one more (colmet-ctl --sample-now), so that neither file
// misses the end of the step.
void task_exit(const PluginConfig &c, StepState &s, const Log &log);

// slurm_spank_exit in slurmstepd: stop the step's sampler (if task_exit did not).
void step_stop(const PluginConfig &c, const StepState &s, const Log &log);

// slurm_spank_exit in srun (local context), after its step: when the
// step was sampled (it asked for --colmet, or mode=all), has a sampler of
// its own (steps=yes, a numbered step), summary_dir is set and srun's
// standard error is a terminal, print the step's summary there (colmet-job
// summary, which waits summary_wait seconds for the collector to write it).
void srun_summary(const PluginConfig &c, uint32_t job_id, uint32_t step_id, const std::optional<UserChoice> &option,
                  bool terminal, const Log &log);

// True when <cgroup_root>/cgroup.controllers exists (a pure cgroup v2 host).
bool cgroup_v2(const PluginConfig &c);

}  // namespace colmet::spank
