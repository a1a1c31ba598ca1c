#include "job/JobMain.hpp"

#include "common/log.hpp"
#include "job/RunCommand.hpp"
#include "node/backends/registry.hpp"

#include <CLI/CLI.hpp>

#include <string_view>

namespace colmet::job {

int job_main(int argc, char **argv)
{
    CLI::App app{"colmet-job: run a command as a monitored job", "colmet-job"};
    app.set_version_flag("--version", std::string("colmet-job ") + COLMET_VERSION);
    app.require_subcommand(1);
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");

    RunOptions run;
    auto *run_cmd = app.add_subcommand(
        "run", "Run a command in a new cgroup, sample it, store its HDF5 file and print a summary");
    auto *dir_opt = run_cmd->add_option("--hdf5-dir", run.hdf5_dir, "Directory for the job's HDF5 file (private collector)")
                        ->capture_default_str();
    run_cmd->add_option("--zeromq-uri", run.zeromq_uri,
                        "Send to this running collector instead of starting a private one")
        ->excludes(dir_opt);
    run_cmd->add_option("--job-id", run.job_id, "Job id (default: run-<date>-<pid>)");
    run_cmd->add_option("-s,--sample-period", run.period_s, "Seconds between samples (0.1 to 3600)")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    run_cmd->add_option("--cgroup-root", run.cgroup_root, "Where the cgroup file systems are mounted")
        ->capture_default_str();
    run_cmd->add_option("--disable-backend", run.disabled_backends, "Do not run this backend (repeatable)")
        ->check([](const std::string &name) {
            return node::find_backend(name) ? std::string() : "unknown backend '" + name + "'";
        });
    run_cmd->add_flag("--enable-perfhw", run.enable_perfhw,
                      "Also count perf events (mounts the perf_event cgroup hierarchy if needed)");
    // One value per occurrence (comma-separated), so that the list cannot
    // swallow the command after it.
    run_cmd->add_option("--perfhw-list", run.perfhw_list,
                        "Events for --enable-perfhw, comma-separated (default: colmet-node's)")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    run_cmd->add_flag("-q,--quiet", run.quiet, "Do not print the summary");
    run_cmd->add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
    run_cmd->add_option("command", run.command, "The command and its arguments, after --");

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
        }
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 64;
    }
    log::setup("job", verbosity);
    run.verbosity = verbosity;
    if (run_cmd->parsed())
        return run_command(run);
    return 64;
}

} // namespace colmet::job
