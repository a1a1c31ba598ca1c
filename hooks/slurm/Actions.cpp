#include "Actions.hpp"

#include "common/names.hpp"

#include "JobMarker.hpp"
#include "Spawn.hpp"
#include "TaskCgroup.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <thread>

namespace colmet::spank {

namespace fs = std::filesystem;

namespace {

std::string describe(const std::vector<std::string> &argv)
{
    std::string out;
    for (const auto &a : argv) {
        if (!out.empty())
            out += ' ';
        out += a;
    }
    return out;
}

// Run colmet-job; log what happened. Returns true when it exited 0.
bool run(const PluginConfig &c, const std::vector<std::string> &argv, const std::string &what, const Log &log)
{
    log.debug("colmet: running " + describe(argv));
    auto r = run_helper(argv, c.timeout);
    if (!r) {
        log.error("colmet: " + what + ": " + r.error().message());
        return false;
    }
    char took[32];
    std::snprintf(took, sizeof took, "%.2f", r->seconds);
    if (r->timed_out) {
        log.error("colmet: " + what + ": " + c.colmet_job + " did not finish within its time limit and was killed");
        return false;
    }
    if (r->status_unknown) {
        log.debug("colmet: " + what + ": finished after " + took + " s (exit status not known)");
        return true;
    }
    if (r->exit_status != 0) {
        log.error("colmet: " + what + ": " + c.colmet_job + " exited with status " + std::to_string(r->exit_status));
        return false;
    }
    log.debug("colmet: " + what + ": done in " + took + " s");
    return true;
}

// What a step learns of the job (its name, its memory here), for the job's
// sampler, which the prolog started without them: sent by the first step
// that has the job's name (claim_context), by any step before that.
void send_context(const PluginConfig &c, const JobRef &job, const Log &log)
{
    const bool named =
        std::any_of(job.context.begin(), job.context.end(), [](const auto &kv) { return kv.first == "job_name"; });
    if (named && !claim_context(c.run_dir, job.job_id))
        return;  // another step of the job sent it
    run(c, context_command(c, sampler_id(job.job_id), job.context),
        "job " + std::to_string(job.job_id) + ": colmet-ctl --context", log);
}

}  // namespace

void srun_summary(const PluginConfig &c, uint32_t job_id, uint32_t step_id, const std::optional<UserChoice> &option,
                  bool terminal, const Log &log)
{
    if (c.summary_dir.empty() || !terminal || !c.steps || step_id >= k_max_normal_step_id || !job_wanted(c, option))
        return;
    const std::string id = sampler_id(job_id, step_id);
    auto r = run_helper(summary_command(c, id), c.summary_wait + 5, true);
    if (!r)
        log.error("colmet: step " + id + ": colmet-job summary: " + r.error().message());
}

bool cgroup_v2(const PluginConfig &c)
{
    std::error_code ec;
    return fs::exists(fs::path(c.cgroup_root) / "cgroup.controllers", ec);
}

bool job_wanted(const PluginConfig &c, const std::optional<UserChoice> &option)
{
    if (option)
        return option->request != Request::off;
    return c.mode == Mode::all;
}

void job_prolog(const PluginConfig &c, const JobRef &job, const std::optional<UserChoice> &option, const Log &log)
{
    if (!job_wanted(c, option))
        return;
    std::string spec = effective_spec(option.value_or(UserChoice{}), c.metrics);
    if (auto err = spec_error(spec)) {
        // Checked at submission already; a spec that fails here came through
        // another path (an edited job environment). Sample with the defaults.
        log.error("colmet: job " + std::to_string(job.job_id) + ": ignoring colmet spec '" + spec + "': " + *err +
                  "; sampling with the site defaults");
        spec = c.metrics;
    }
    if (auto r = write_marker(c.run_dir, job.job_id, spec); !r)
        log.error("colmet: job " + std::to_string(job.job_id) + ": " + r.error().message() +
                  " (its steps will not get their own samplers)");
    if (run(c, job_start_command(c, job, spec), "job " + std::to_string(job.job_id) + ": colmet-job start", log))
        log.info("colmet: job " + std::to_string(job.job_id) + ": sampler started" +
                 (spec.empty() ? std::string() : " (spec " + spec + ")"));
}

void job_epilog(const PluginConfig &c, uint32_t job_id, const Log &log)
{
    std::error_code ec;
    bool marker = read_marker(c.run_dir, job_id).has_value();
    bool pid_file = fs::exists(job_file(c.run_dir, sampler_id(job_id), JobFile::sampler_record), ec);
    // Step samplers still recorded: give the stops slurmstepd started when
    // the steps ended a moment to finish, then stop what is left.
    auto steps = leftover_step_samplers(c.run_dir, job_id);
    for (int i = 0; i < 40 && !steps.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        steps = leftover_step_samplers(c.run_dir, job_id);
    }
    for (const auto &id : steps)
        run(c, stop_command(c, id), "step " + id + ": colmet-job stop", log);
    if (marker || pid_file) {
        if (run(c, stop_command(c, sampler_id(job_id)), "job " + std::to_string(job_id) + ": colmet-job stop", log))
            log.info("colmet: job " + std::to_string(job_id) + ": sampler stopped");
    }
    if (auto r = remove_marker(c.run_dir, job_id); !r)
        log.error("colmet: job " + std::to_string(job_id) + ": " + r.error().message());
}

StepState step_start(const PluginConfig &c, const JobRef &job, uint32_t step_id,
                     const std::optional<UserChoice> &option, const Log &log)
{
    StepState s;
    s.job_id = job.job_id;
    s.v2 = cgroup_v2(c);
    s.job_rel = job_cgroup(job);
    auto marker = read_marker(c.run_dir, job.job_id);
    s.job_sampled = marker.has_value();
    if (s.job_sampled && !job.context.empty())
        send_context(c, job, log);
    if (!c.steps || step_id >= k_max_normal_step_id)
        return s;
    if (option && option->request == Request::off)
        return s;
    std::string spec;
    if (option && option->request == Request::spec)
        spec = option->spec;
    else if (marker)
        spec = *marker;
    else if (option)
        spec = c.metrics;
    else
        return s;  // neither the job nor the step asked for colmet
    if (spec_error(spec))
        spec = c.metrics;
    s.step_rel = step_cgroup(job, step_id);
    s.step_id = sampler_id(job.job_id, step_id);
    s.step_sampler = run(c, step_start_command(c, job, step_id, spec), "step " + s.step_id + ": colmet-job start", log);
    if (s.step_sampler)
        log.debug("colmet: step " + s.step_id + ": sampler started");
    return s;
}

void task_attach(const StepState &s, pid_t pid, const std::string &mountinfo, const std::string &proc_cgroup,
                 const PluginConfig &c, const Log &log)
{
    if (s.v2 || (!s.job_sampled && !s.step_sampler))
        return;
    auto mounts = colmet_v1_mounts(mountinfo, c.cgroup_root);
    std::optional<std::string> step;
    if (s.step_sampler)
        step = s.step_rel;
    auto targets = attach_targets(mounts, proc_cgroup, s.job_rel, step);
    if (auto r = attach_pid(targets, pid); !r)
        log.error("colmet: task " + std::to_string(pid) + ": " + r.error().message());
}

void task_exit(const PluginConfig &c, StepState &s, const Log &log)
{
    ++s.exited_tasks;
    if (s.local_tasks == 0 || s.exited_tasks != s.local_tasks)
        return;
    if (s.step_sampler && !s.step_stopped) {
        s.step_stopped = true;
        run(c, stop_command(c, s.step_id), "step " + s.step_id + ": colmet-job stop", log);
    }
    if (s.job_sampled && !c.colmet_ctl.empty())
        run(c, sample_now_command(c, sampler_id(s.job_id)), "job " + sampler_id(s.job_id) + ": colmet-ctl --sample-now",
            log);
}

void step_stop(const PluginConfig &c, const StepState &s, const Log &log)
{
    if (!s.step_sampler || s.step_stopped)
        return;
    // Detached: when the job ends, Slurm kills what slurmstepd still has
    // running (proctrack/linuxproc: every descendant), and the step's end
    // need not wait for the final sample. The job epilog stops the sampler
    // if this one did not get to do it.
    auto argv = stop_command(c, s.step_id);
    log.debug("colmet: running detached " + describe(argv));
    if (auto r = spawn_detached(argv); !r)
        log.error("colmet: step " + s.step_id + ": colmet-job stop: " + r.error().message());
}

}  // namespace colmet::spank
