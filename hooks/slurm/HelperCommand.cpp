#include "HelperCommand.hpp"

#include "common/names.hpp"
#include "scheduler/SlurmLayout.hpp"

#include <cstdio>

namespace colmet::spank {

namespace {

std::string seconds_text(double s)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

// --context KEY=VALUE for each item (colmet-job start and colmet-ctl alike).
void add_context_args(std::vector<std::string> &argv, const sched::Context &context)
{
    for (const auto &[key, value] : context) {
        argv.emplace_back("--context");
        std::string item = key;
        item += '=';
        item += value;
        argv.push_back(std::move(item));
    }
}

void add_common_start(std::vector<std::string> &argv, const PluginConfig &c, const std::string &spec)
{
    // --scheduler slurm: colmet-job makes only colmet's perf_event directory
    // when Slurm has cgroups of its own here, the job's cgroups otherwise.
    argv.insert(argv.end(), {"--scheduler", "slurm", "--hook", "--run-dir", c.run_dir, "--cgroup-root", c.cgroup_root});
    if (!spec.empty())
        argv.insert(argv.end(), {"--spec", spec});
    if (!c.collector.empty())
        argv.insert(argv.end(), {"--zeromq-uri", c.collector});
    if (c.period)
        argv.insert(argv.end(), {"--sample-period", seconds_text(*c.period)});
    if (!c.log_file.empty())
        argv.insert(argv.end(), {"--log-file", c.log_file});
    if (!c.spool_dir.empty())
        argv.insert(argv.end(), {"--spool-dir", c.spool_dir});
}

}  // namespace

std::string sampler_id(uint32_t job_id) { return sched::slurm::sampler_id({job_id, std::nullopt}); }

std::string sampler_id(uint32_t job_id, uint32_t step_id) { return sched::slurm::sampler_id({job_id, step_id}); }

std::string job_cgroup(const JobRef &job) { return sched::slurm::perf_cgroup(job.uid, {job.job_id, std::nullopt}); }

std::string step_cgroup(const JobRef &job, uint32_t step_id)
{
    return sched::slurm::perf_cgroup(job.uid, {job.job_id, step_id});
}

std::vector<std::string> job_start_command(const PluginConfig &c, const JobRef &job, const std::string &spec)
{
    std::vector<std::string> argv{c.colmet_job, "start", "--job-id", sampler_id(job.job_id), "--user", job.user};
    add_common_start(argv, c, spec);
    add_context_args(argv, job.context);
    argv.insert(argv.end(), {"--", "--meta", "slurm_job_id=" + std::to_string(job.job_id)});
    return argv;
}

std::vector<std::string> step_start_command(const PluginConfig &c, const JobRef &job, uint32_t step_id,
                                            const std::string &spec)
{
    std::vector<std::string> argv{c.colmet_job, "start", "--job-id", sampler_id(job.job_id, step_id),
                                  "--user",     job.user};
    add_common_start(argv, c, spec);
    add_context_args(argv, job.context);
    argv.insert(argv.end(), {"--", "--meta", "slurm_job_id=" + std::to_string(job.job_id), "--meta",
                             "slurm_step_id=" + std::to_string(step_id)});
    return argv;
}

std::vector<std::string> stop_command(const PluginConfig &c, const std::string &id)
{
    std::vector<std::string> argv{c.colmet_job, "stop", "--hook", "--job-id", id, "--run-dir", c.run_dir};
    if (!c.log_file.empty())
        argv.insert(argv.end(), {"--log-file", c.log_file});
    if (!c.spool_dir.empty())
        argv.insert(argv.end(), {"--spool-dir", c.spool_dir});
    return argv;
}

std::vector<std::string> sample_now_command(const PluginConfig &c, const std::string &id)
{
    return {c.colmet_ctl, "--job-id", id, "--sample-now", "--control-dir", c.run_dir, "--timeout", "3"};
}

std::vector<std::string> summary_command(const PluginConfig &c, const std::string &id)
{
    return {c.colmet_job, "summary", "--wait", seconds_text(c.summary_wait),
            job_file(c.summary_dir, id, JobFile::summary).string()};
}

std::vector<std::string> context_command(const PluginConfig &c, const std::string &id, const sched::Context &context)
{
    std::vector<std::string> argv{c.colmet_ctl, "--job-id", id, "--control-dir", c.run_dir, "--timeout", "3"};
    add_context_args(argv, context);
    return argv;
}

}  // namespace colmet::spank
