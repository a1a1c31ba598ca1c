// spank_colmet.so: the C ABI shim between Slurm's SPANK and colmet.
//
// Every exported function catches everything: no C++ exception ever reaches
// Slurm. The callbacks that run for a job (job_prolog, job_epilog, the
// slurmstepd ones) always return 0: monitoring must never fail a job or
// drain a node. Only load-time checks fail (a bad plugstack.conf argument in
// srun, sbatch, salloc or slurmd, a bad --colmet=SPEC at submission), loudly.
// The logic lives in Actions.cpp and friends, which know nothing of Slurm.
#include "Actions.hpp"
#include "PluginConfig.hpp"
#include "SpecCheck.hpp"

extern "C" {
#include <slurm/spank.h>
}

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#define COLMET_SPANK_EXPORT __attribute__((visibility("default")))

// SPANK_PLUGIN(colmet, 1), spelled out: in C++ a namespace-scope const has
// internal linkage, so the macro would export nothing.
extern "C" {
COLMET_SPANK_EXPORT extern const char plugin_name[] = "colmet";
COLMET_SPANK_EXPORT extern const char plugin_type[] = "spank";
COLMET_SPANK_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
COLMET_SPANK_EXPORT extern const unsigned int spank_plugin_version = 1;
}

namespace {

using namespace colmet::spank;

// The environment variable users may set instead of --colmet, and the one
// Slurm itself reads for the option (SLURM_SPANK_ + _SLURM_SPANK_OPTION_<plugin>_<option>).
constexpr const char *k_user_env = "SLURM_COLMET";
constexpr const char *k_slurm_env = "SLURM_SPANK__SLURM_SPANK_OPTION_colmet_colmet";

std::optional<PluginConfig> g_config;
std::optional<UserChoice> g_option;  // what --colmet said in this process
StepState g_step;
std::optional<std::pair<uint32_t, uint32_t>> g_srun_step;  // srun: its job and step, for the summary at exit

Log slurm_log()
{
    return Log{
        [](const std::string &m) { slurm_info("%s", m.c_str()); },
        [](const std::string &m) { slurm_error("%s", m.c_str()); },
        [](const std::string &m) { slurm_debug("%s", m.c_str()); },
    };
}

int option_callback(int, const char *optarg, int remote);

char g_opt_name[] = "colmet";
char g_opt_arginfo[] = "SPEC";
char g_opt_usage[] = "Sample this job with colmet. SPEC (optional): perfhw, perfhw:EVENT,..., period=SECONDS, "
                     "rapl, temperature, comma-separated; off opts out. Also from $SLURM_COLMET. "
                     "See spank-colmet(8).";
struct spank_option g_option_table = {g_opt_name, g_opt_arginfo, g_opt_usage, 2, 0, option_callback};

int option_callback(int, const char *optarg, int remote)
{
    try {
        UserChoice choice = interpret_option(optarg);
        if (!remote && choice.request == Request::spec) {
            if (auto err = spec_error(choice.spec)) {
                slurm_error("colmet: invalid --colmet (or %s) value '%s': %s", k_user_env, choice.spec.c_str(),
                            err->c_str());
                return -1;
            }
        }
        g_option = std::move(choice);
        return 0;
    } catch (...) {
        slurm_error("colmet: internal error while reading --colmet");
        return remote ? 0 : -1;
    }
}

colmet::Result<PluginConfig> load_config(int ac, char **av)
{
    return parse_config(ac, av, std::string(COLMET_HELPER_PATH), std::string(COLMET_CTL_PATH));
}

std::string user_name(uid_t uid)
{
    std::vector<char> buf(16384);
    struct passwd pw {};
    struct passwd *res = nullptr;
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res != nullptr)
        return res->pw_name;
    if (const char *u = std::getenv("SLURM_JOB_USER"); u != nullptr && *u != '\0')
        return u;
    return std::to_string(uid);
}

std::string slurp(const char *path)
{
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// Job id, uid and user of the job this callback runs for.
bool job_ref(spank_t sp, JobRef &job)
{
    if (spank_get_item(sp, S_JOB_ID, &job.job_id) != ESPANK_SUCCESS)
        return false;
    if (spank_get_item(sp, S_JOB_UID, &job.uid) != ESPANK_SUCCESS)
        return false;
    job.user = user_name(job.uid);
    return true;
}

// What slurmstepd knows of the job (remote context): the job's environment
// (spank_getenv) and its memory on this node.
colmet::sched::Context step_context(spank_t sp)
{
    std::map<std::string, std::string> seen;
    auto job_env = [sp, &seen](const char *name) -> const char * {
        char buf[1024];
        if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS)
            return nullptr;
        return seen.insert_or_assign(name, std::string(buf)).first->second.c_str();
    };
    std::optional<uint64_t> mem_mb;
    if (uint64_t mb = 0; spank_get_item(sp, S_JOB_ALLOC_MEM, &mb) == ESPANK_SUCCESS)
        mem_mb = mb;
    return colmet::sched::slurm_step_context(job_env, mem_mb);
}

// The prolog and epilog run in their own process, without slurm_spank_init:
// the plugstack arguments are parsed here, and --colmet is read back from the
// job's environment with spank_option_getopt.
int job_script(spank_t sp, int ac, char **av, bool prolog)
{
    auto config = load_config(ac, av);
    if (!config) {
        slurm_error("colmet: %s; the job is not sampled", config.error().message().c_str());
        return 0;
    }
    JobRef job;
    if (!job_ref(sp, job)) {
        slurm_error("colmet: cannot read the job id and owner in the %s", prolog ? "prolog" : "epilog");
        return 0;
    }
    if (prolog) {
        job.context = colmet::sched::slurm_prolog_context([](const char *name) { return std::getenv(name); });
        std::optional<UserChoice> option;
        char *arg = nullptr;
        if (spank_option_getopt(sp, &g_option_table, &arg) == ESPANK_SUCCESS)
            option = interpret_option(arg);
        job_prolog(*config, job, option, slurm_log());
    } else {
        job_epilog(*config, job.job_id, slurm_log());
    }
    return 0;
}

}  // namespace

extern "C" {

COLMET_SPANK_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
    try {
        spank_context_t ctx = spank_context();
        bool submit_side = ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR;
        auto config = load_config(ac, av);
        if (!config) {
            slurm_error("colmet: %s", config.error().message().c_str());
            // Loud where a person or slurmd start-up sees it; slurmstepd
            // must not fail a job over it.
            return ctx == S_CTX_REMOTE ? 0 : -1;
        }
        g_config = std::move(*config);
        if (submit_side || ctx == S_CTX_REMOTE) {
            if (spank_option_register(sp, &g_option_table) != ESPANK_SUCCESS) {
                slurm_error("colmet: cannot register the --colmet option");
                return ctx == S_CTX_REMOTE ? 0 : -1;
            }
        }
        // SLURM_COLMET=SPEC is an alias of Slurm's own variable for the
        // option, which srun/sbatch/salloc check (with the option's
        // callback) before the command line.
        if (submit_side) {
            const char *alias = std::getenv(k_user_env);
            if (alias != nullptr && std::getenv(k_slurm_env) == nullptr)
                setenv(k_slurm_env, alias, 1);
        }
        return 0;
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_init");
        return 0;
    }
}

COLMET_SPANK_EXPORT int slurm_spank_init_post_opt(spank_t sp, int, char **)
{
    try {
        if (spank_context() != S_CTX_REMOTE || !g_config)
            return 0;
        JobRef job;
        uint32_t step_id = 0;
        if (!job_ref(sp, job) || spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS) {
            slurm_error("colmet: cannot read the job and step ids in slurmstepd");
            return 0;
        }
        job.context = step_context(sp);
        g_step = step_start(*g_config, job, step_id, g_option, slurm_log());
        uint32_t local_tasks = 0;
        if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) == ESPANK_SUCCESS)
            g_step.local_tasks = local_tasks;
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_init_post_opt");
    }
    return 0;
}

COLMET_SPANK_EXPORT int slurm_spank_task_init_privileged(spank_t, int, char **)
{
    try {
        if (spank_context() != S_CTX_REMOTE || !g_config || (!g_step.job_sampled && !g_step.step_sampler))
            return 0;
        task_attach(g_step, getpid(), slurp("/proc/self/mountinfo"), slurp("/proc/self/cgroup"), *g_config,
                    slurm_log());
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_task_init_privileged");
    }
    return 0;
}

COLMET_SPANK_EXPORT int slurm_spank_task_exit(spank_t, int, char **)
{
    try {
        if (spank_context() == S_CTX_REMOTE && g_config)
            task_exit(*g_config, g_step, slurm_log());
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_task_exit");
    }
    return 0;
}

// srun (local context), once its step exists: the job and step ids, which
// slurm_spank_exit no longer gets there.
COLMET_SPANK_EXPORT int slurm_spank_local_user_init(spank_t sp, int, char **)
{
    try {
        uint32_t job_id = 0;
        uint32_t step_id = 0;
        if (spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS &&
            spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS)
            g_srun_step = std::make_pair(job_id, step_id);
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_local_user_init");
    }
    return 0;
}

COLMET_SPANK_EXPORT int slurm_spank_exit(spank_t, int, char **)
{
    try {
        if (spank_context() == S_CTX_REMOTE && g_config)
            step_stop(*g_config, g_step, slurm_log());
        if (spank_context() == S_CTX_LOCAL && g_config && g_srun_step)
            srun_summary(*g_config, g_srun_step->first, g_srun_step->second, g_option, isatty(STDERR_FILENO) == 1,
                         slurm_log());
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_exit");
    }
    return 0;
}

COLMET_SPANK_EXPORT int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    try {
        return job_script(sp, ac, av, true);
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_job_prolog");
        return 0;
    }
}

COLMET_SPANK_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    try {
        return job_script(sp, ac, av, false);
    } catch (...) {
        slurm_error("colmet: internal error in slurm_spank_job_epilog");
        return 0;
    }
}

}  // extern "C"
