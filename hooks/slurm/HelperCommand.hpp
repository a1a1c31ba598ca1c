// The colmet-job command lines the plugin runs (see colmet-job(8)).
#pragma once

#include "PluginConfig.hpp"

#include "scheduler/JobContext.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace colmet::spank {

// Slurm's step ids at and above this value are the batch script, the extern
// and interactive steps and pending steps (slurm.h SLURM_MAX_NORMAL_STEP_ID).
inline constexpr uint32_t k_max_normal_step_id = 0xfffffff0U;

struct JobRef {
    uint32_t job_id = 0;
    uid_t uid = 0;
    std::string user;        // the owner's login name
    sched::Context context;  // what Slurm said of the job where the callback runs (colmet-job --context)
};

// The sampler id of a job ("123") or of one of its steps ("123.4").
std::string sampler_id(uint32_t job_id);
std::string sampler_id(uint32_t job_id, uint32_t step_id);

// colmet's perf_event directory of the job or step on cgroup v1
// (/slurm/uid_<uid>/job_<job>[/step_<step>], SlurmLayout.hpp), where the
// plugin puts every task. Slurm's own directories are found from the tasks
// by the sampler (colmet-node --find-cgroup).
std::string step_cgroup(const JobRef &job, uint32_t step_id);
std::string job_cgroup(const JobRef &job);

// colmet-job start for the whole job (job prolog).
std::vector<std::string> job_start_command(const PluginConfig &c, const JobRef &job, const std::string &spec);

// colmet-job start for one step (slurmstepd, before the tasks start).
std::vector<std::string> step_start_command(const PluginConfig &c, const JobRef &job, uint32_t step_id,
                                            const std::string &spec);

// colmet-job stop for a sampler id.
std::vector<std::string> stop_command(const PluginConfig &c, const std::string &id);

// colmet-ctl --sample-now for a sampler id (its control socket is in run_dir).
std::vector<std::string> sample_now_command(const PluginConfig &c, const std::string &id);

// colmet-job summary --wait <summary_wait> <summary_dir>/<id's summary>: the
// summary of a step (its <stem>.json), where srun's host sees the
// collector's files.
std::vector<std::string> summary_command(const PluginConfig &c, const std::string &id);

// colmet-ctl --context KEY=VALUE... for a sampler id: what a step learns of
// the job, for the job's sampler (root only).
std::vector<std::string> context_command(const PluginConfig &c, const std::string &id, const sched::Context &context);

}  // namespace colmet::spank
