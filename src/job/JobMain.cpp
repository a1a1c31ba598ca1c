#include "job/JobMain.hpp"

#include "common/collectors.hpp"
#include "common/log.hpp"
#include "job/MountCommand.hpp"
#include "job/RunCommand.hpp"
#include "job/StartCommand.hpp"
#include "job/Summary.hpp"
#include "scheduler/JobContext.hpp"
#include "scheduler/Profile.hpp"
#include "spec/backend_catalog.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string_view>

namespace colmet::job {
namespace {

// --zeromq-uri: one collector or several (common/collectors.hpp).
const CLI::Validator k_collector_list(
    [](std::string &value) {
        auto list = parse_collector_list(value);
        return list ? std::string() : list.error().message();
    },
    "URI[,URI...]");

}  // namespace

int job_main(int argc, char **argv)
{
    CLI::App app{"colmet-job: run a command as a monitored job, or start and stop a job's sampler from scheduler "
                 "hooks",
                 "colmet-job"};
    app.set_version_flag("--version", std::string("colmet-job ") + COLMET_VERSION);
    app.require_subcommand(1);
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");

    RunOptions run;
    auto *run_cmd =
        app.add_subcommand("run", "Run a command in a new cgroup, sample it, store its HDF5 file and print a summary");
    auto *dir_opt =
        run_cmd->add_option("--hdf5-dir", run.hdf5_dir, "Directory for the job's HDF5 file (private collector)")
            ->capture_default_str();
    run_cmd
        ->add_option("--zeromq-uri", run.zeromq_uri,
                     "Send to this running collector instead of starting a private one (several, "
                     "comma-separated: the job's one by a hash of the job id)")
        ->check(k_collector_list)
        ->excludes(dir_opt);
    run_cmd->add_option("--job-id", run.job_id, "Job id (default: run-<date>-<pid>)");
    run_cmd->add_option("-s,--sample-period", run.period_s, "Seconds between samples (0.1 to 3600)")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    run_cmd->add_option("--cgroup-root", run.cgroup_root, "Where the cgroup file systems are mounted")
        ->capture_default_str();
    run_cmd->add_option("--disable-backend", run.disabled_backends, "Do not run this backend (repeatable)")
        ->check([](const std::string &name) {
            const spec::BackendInfo *b = spec::backend_info(name);
            return b && (b->kind == spec::BackendKind::job || b->kind == spec::BackendKind::derived)
                       ? std::string()
                       : "unknown backend '" + name + "'";
        });
    run_cmd->add_flag(std::string(spec::k_perfhw_flag), run.enable_perfhw,
                      "Also count perf events (mounts the perf_event cgroup hierarchy if needed)");
    // One value per occurrence (comma-separated), so that the list cannot
    // swallow the command after it.
    run_cmd
        ->add_option("--perfhw-list", run.perfhw_list,
                     "Events for --enable-perfhw, comma-separated (default: colmet-node's)")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    for (const auto &b : spec::k_backend_catalog) {  // --enable-RAPL, --enable-temperature, ...
        if (!spec::enabled_by_flag(b.kind))
            continue;
        run_cmd->add_flag_callback(
            std::string(b.flag),
            [&run, name = std::string(b.name)] {
                auto &list = run.node_backends;
                if (std::find(list.begin(), list.end(), name) == list.end())
                    list.push_back(name);
            },
            "Also run colmet-node's node-level backend " + std::string(b.name) + " (" + std::string(b.description) +
                ")");
    }
    run_cmd->add_flag("--as-root", run.as_root,
                      "Under sudo, run the command as root (by default it runs as the user who ran sudo)");
    run_cmd->add_flag("-q,--quiet", run.quiet, "Do not print the summary");
    run_cmd
        ->add_option("--report", run.report_path, "Also write the job's HTML report to this file (runs colmet-report)")
        ->excludes("--zeromq-uri");
    run_cmd->add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
    run_cmd->add_option("command", run.command, "The command and its arguments, after --");

    StartOptions start;
    auto *start_cmd = app.add_subcommand(
        "start", "Start a detached colmet-node for a scheduler's job (run as root from OAR or Slurm hooks)");
    start_cmd->add_option("--job-id", start.job_id, "The scheduler's job id (42, 42_3, 42.0)")->required();
    start_cmd->add_option("--user", start.user, "The job's owner")->required();
    auto *cgroup_opt = start_cmd->add_option("--cgroup", start.cgroup,
                                             "The job's cgroup, relative to the hierarchies (/oar/alice_42)");
    auto *find_opt = start_cmd->add_option(
        "--find-cgroup", start.find_cgroup,
        "With --cgroup: the sampler finds the job's directory in each hierarchy from its processes, the one "
        "named by this level (job_42, job_42/step_0)");
    find_opt->needs(cgroup_opt);
    std::string layouts;
    for (const auto &p : sched::profiles())
        layouts += (layouts.empty() ? "" : "; ") + std::string(p.layout);
    start_cmd
        ->add_option("--scheduler", start.scheduler,
                     "The scheduler whose hook calls; its layout, unless --cgroup gives the path: " + layouts)
        ->check(CLI::IsMember(sched::profile_names()));
    start_cmd->add_option("--spec", start.spec,
                          "The user's request: perfhw[:EVENT,...], period=S, " + spec::node_spec_keywords() +
                              " (comma-separated)");
    start_cmd
        ->add_option("--context", start.context,
                     "KEY=VALUE: what the scheduler says of the job, stored in its file (repeatable; keys: " +
                         sched::context_key_names() + ")")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    start_cmd
        ->add_option("--zeromq-uri", start.zeromq_uri,
                     "Collector address, or several comma-separated (default: [node] zeromq-uri of the "
                     "config, else tcp://127.0.0.1:5556)")
        ->check(k_collector_list);
    start_cmd
        ->add_option("-s,--sample-period", start.period_s,
                     "Seconds between samples unless the spec sets it (default: the config's, else 5)")
        ->check(CLI::Range(0.1, 3600.0));
    start_cmd->add_flag(std::string(spec::k_perfhw_flag), start.enable_perfhw,
                        "Count perf events for every job unless its spec says which");
    start_cmd->add_option("--perfhw-list", start.perfhw_list, "Events for --enable-perfhw, comma-separated")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    start_cmd->add_flag("--create-cgroup", start.create_cgroup,
                        "With --cgroup, for schedulers without cgroups: create the job's cgroup (removed again at "
                        "stop); with a scheduler that makes cgroups, only colmet's perf_event directory");
    start_cmd->add_flag("--hook", start.hook, "Hook mode: always exit 0, log to the log file only");
    start_cmd->add_option("--run-dir", start.run_dir, "Where the <job>.pid records live")->capture_default_str();
    start_cmd->add_option("--cgroup-root", start.cgroup_root, "Where the cgroup file systems are mounted")
        ->capture_default_str();
    start_cmd->add_option("--sysfs-root", start.sysfs_root, "Where sysfs is mounted (perf event names)")
        ->capture_default_str();
    start_cmd->add_option("--log-file", start.log_file, "Log file of colmet-job and of the sampler it starts")
        ->capture_default_str();
    start_cmd->add_option("-c,--config", start.config, "colmet.conf to read (passed on to colmet-node)")
        ->capture_default_str();
    start_cmd->add_option("--spool-dir", start.spool_dir,
                          "The node spool, passed to colmet-node (default: [node] spool-dir of the config, else "
                          "/var/spool/colmet); the sampler flushes spooled data there in the background");
    start_cmd->add_option("--node-binary", start.node_binary, "colmet-node to run (default: found next to colmet-job)");
    start_cmd->add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
    start_cmd->add_option("node-options", start.node_args, "More colmet-node options, after --");

    StopOptions stop;
    auto *stop_cmd = app.add_subcommand("stop", "Stop a job's sampler: final sample, counters reset, cleanup");
    stop_cmd->add_option("--job-id", stop.job_id, "The scheduler's job id")->required();
    stop_cmd->add_flag("--hook", stop.hook, "Hook mode: always exit 0, log to the log file only");
    stop_cmd->add_option("--run-dir", stop.run_dir, "Where the <job>.pid records live")->capture_default_str();
    stop_cmd->add_option("--timeout", stop.timeout_s, "Seconds to wait after SIGTERM before SIGKILL")
        ->check(CLI::Range(0.1, 60.0))
        ->capture_default_str();
    stop_cmd->add_option("--log-file", stop.log_file, "Log file")->capture_default_str();
    stop_cmd->add_option("-c,--config", stop.config, "colmet.conf to read ([node] spool-dir)")->capture_default_str();
    stop_cmd->add_option("--spool-dir", stop.spool_dir,
                         "The node spool: what the sampler spooled is flushed in the background (default: [node] "
                         "spool-dir of the config, else /var/spool/colmet)");
    stop_cmd->add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");

    StatusOptions status;
    auto *status_cmd = app.add_subcommand("status", "List the samplers started by colmet-job start");
    status_cmd->add_option("--run-dir", status.run_dir, "Where the <job>.pid records live")->capture_default_str();

    FlushSpoolOptions flush;
    auto *flush_cmd = app.add_subcommand(
        "flush-spool", "Send the node spool's data to the collectors; delete each file once all of it is acknowledged");
    flush_cmd->add_option("--spool-dir", flush.spool_dir,
                          "The node spool (default: [node] spool-dir of the config, else /var/spool/colmet)");
    flush_cmd->add_option("-c,--config", flush.config, "colmet.conf to read ([node] spool-dir)")->capture_default_str();
    flush_cmd->add_option("--wait", flush.wait_s, "Seconds to wait for the acknowledgements of each file")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    flush_cmd
        ->add_option("--max-age", flush.max_age_s,
                     "Drop messages older than this many seconds (the collector's --max-message-delay refuses them)")
        ->check(CLI::Range(60.0, 31536000.0))
        ->capture_default_str();
    flush_cmd->add_flag("--hook", flush.hook, "Hook mode: always exit 0, log to the log file only");
    flush_cmd->add_option("--log-file", flush.log_file,
                          "Log to this file (default: stderr; in hook mode "
                          "/var/log/colmet/colmet.log)");
    flush_cmd->add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");

    MountOptions mount;
    auto *mount_cmd = app.add_subcommand(
        "mount-perf-event", "Mount the perf_event cgroup v1 hierarchy when nobody has (at boot, before any job)");
    mount_cmd->add_option("--cgroup-root", mount.cgroup_root, "Where the cgroup file systems are mounted")
        ->capture_default_str();

    std::string summary_file;
    double summary_wait_s = 10;
    auto *summary_cmd = app.add_subcommand(
        "summary", "Print a job's summary from its JSON file, waiting for the collector to write it (Slurm's srun)");
    summary_cmd->add_option("file", summary_file, "The job's summary, <stem>.json beside its HDF5 file")->required();
    summary_cmd->add_option("--wait", summary_wait_s, "Seconds to wait for the summary when the job has just ended")
        ->check(CLI::Range(0.0, 600.0))
        ->capture_default_str();

    // Everything after the first "--" is the command, taken as it is: CLI11
    // 2.1 lets a list option (--disable-backend, --perfhw-list) just before
    // "--" eat the separator and then parses the command's own options.
    std::vector<std::string> after_dashes;
    int cli_argc = argc;
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--") {
            cli_argc = i;
            after_dashes.assign(argv + i + 1, argv + argc);
            break;
        }
    try {
        app.parse(cli_argc, argv);
        if (run_cmd->parsed() && cli_argc != argc) {
            if (!run.command.empty())
                throw CLI::ValidationError("command", "give the command either before or after --, not both");
            run.command = std::move(after_dashes);
        } else if (start_cmd->parsed() && cli_argc != argc) {
            if (!start.node_args.empty())
                throw CLI::ValidationError("node-options", "give colmet-node options after --");
            start.node_args = std::move(after_dashes);
        }
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 64;
    }
    start.verbosity = stop.verbosity = flush.verbosity = verbosity;
    if (start_cmd->parsed())
        return start_command(start);
    if (stop_cmd->parsed())
        return stop_command(stop);
    if (status_cmd->parsed())
        return status_command(status);
    if (flush_cmd->parsed())
        return flush_spool_command(flush);
    if (mount_cmd->parsed())
        return mount_command(mount);
    if (summary_cmd->parsed())
        return show_summary(summary_file, summary_wait_s);
    log::setup("job", verbosity);
    run.verbosity = verbosity;
    if (run_cmd->parsed())
        return run_command(run);
    return 64;
}

}  // namespace colmet::job
