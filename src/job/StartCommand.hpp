// colmet-job start: the helper scheduler hooks call to run one detached
// colmet-node per job (stop, status and flush-spool: their own headers) (OAR's job_resource_manager, Slurm's
// prolog and epilog). Run as root.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

inline constexpr const char *k_default_run_dir = "/run/colmet";
inline constexpr const char *k_default_log_file = "/var/log/colmet/colmet.log";
inline constexpr const char *k_default_config = "/etc/colmet/colmet.conf";

// Exit codes of start and stop outside hook mode (hook mode always exits 0).
inline constexpr int k_exit_failed = 1;  // nothing started / nothing to stop
inline constexpr int k_exit_usage = 64;

struct StartOptions {
    std::string job_id;
    std::string user;
    std::string cgroup;                // relative job cgroup, as the hook got it (empty: the profile says)
    std::string scheduler;             // the profile (scheduler/Profile.hpp): "oar", "slurm"
    std::string find_cgroup;           // the job's level, for colmet-node --find-cgroup (with --cgroup)
    std::string spec;                  // the user's request (oarsub -t colmet=SPEC, srun --colmet=SPEC)
    std::vector<std::string> context;  // KEY=VALUE, the job's context (scheduler/JobContext.hpp)
    std::string zeromq_uri;            // empty: [node] zeromq-uri of the config, else colmet-node's default
    double period_s = 0;               // 0: [node] sample-period of the config, else colmet-node's default
    bool enable_perfhw = false;        // site default when the spec says nothing of perfhw
    std::vector<std::string> perfhw_list;
    bool create_cgroup = false;  // create the job's cgroup when the scheduler has not yet
    bool hook = false;           // always exit 0, log only
    std::string run_dir = k_default_run_dir;
    std::string cgroup_root = "/sys/fs/cgroup";
    std::string sysfs_root = "/sys";
    std::string log_file = k_default_log_file;
    std::string config = k_default_config;
    std::string spool_dir;               // empty: [node] spool-dir of the config, else colmet-node's default
    std::string node_binary;             // empty: colmet-node next to colmet-job, then the install dirs, then PATH
    std::vector<std::string> node_args;  // after "--": passed to colmet-node as they are
    int verbosity = 0;
};

int start_command(const StartOptions &options);

// Declares `start` and its options on `app`, filled into `options`.
CLI::App *add_start_command(CLI::App &app, StartOptions &options);

// The node spool directory: `given`, else [node] spool-dir of the config,
// else colmet-node's default. "" when the config turns the spool off.
std::string spool_dir_of(const std::string &given, const std::string &config);
// Start `colmet-job flush-spool` detached when the spool holds files: what
// stop does after its job (and colmet-node at start), so that spooled data
// goes as soon as a collector answers. Quiet when there is nothing to do.
void flush_spool_in_background(const std::string &spool_dir, const std::string &config, const std::string &log_file);

}  // namespace colmet::job
