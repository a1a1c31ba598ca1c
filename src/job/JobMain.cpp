#include "job/JobMain.hpp"

#include "common/log.hpp"
#include "job/FlushSpoolCommand.hpp"
#include "job/MountCommand.hpp"
#include "job/RunCommand.hpp"
#include "job/StartCommand.hpp"
#include "job/StatusCommand.hpp"
#include "job/StopCommand.hpp"
#include "job/Summary.hpp"

#include <CLI/CLI.hpp>

#include <string_view>

namespace colmet::job {

int job_main(int argc, char **argv)
{
    CLI::App app{"colmet-job: run a command as a monitored job, or start and stop a job's sampler from scheduler "
                 "hooks",
                 "colmet-job"};
    app.set_version_flag("--version", std::string("colmet-job ") + COLMET_VERSION);
    app.require_subcommand(1);
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");

    // Each subcommand declares its options in its own file.
    RunOptions run;
    StartOptions start;
    StopOptions stop;
    StatusOptions status;
    FlushSpoolOptions flush;
    MountOptions mount;
    SummaryOptions summary;
    CLI::App *run_cmd = add_run_command(app, run);
    CLI::App *start_cmd = add_start_command(app, start);
    CLI::App *stop_cmd = add_stop_command(app, stop);
    CLI::App *status_cmd = add_status_command(app, status);
    CLI::App *flush_cmd = add_flush_spool_command(app, flush);
    CLI::App *mount_cmd = add_mount_command(app, mount);
    CLI::App *summary_cmd = add_summary_command(app, summary);

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
    // -v before the subcommand counts as after it.
    for (int *v : {&run.verbosity, &start.verbosity, &stop.verbosity, &flush.verbosity})
        *v += verbosity;
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
        return show_summary(summary.file, summary.wait_s);
    log::setup("job", run.verbosity);
    if (run_cmd->parsed())
        return run_command(run);
    return 64;
}

}  // namespace colmet::job
