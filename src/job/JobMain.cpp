#include "job/JobMain.hpp"

#include "common/log.hpp"
#include "job/RunCommand.hpp"
#include "node/backends/registry.hpp"

#include <CLI/CLI.hpp>

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
    run_cmd->add_flag("-q,--quiet", run.quiet, "Do not print the summary");
    run_cmd->add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
    run_cmd->add_option("command", run.command, "The command and its arguments, after --")->required();

    try {
        app.parse(argc, argv);
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
