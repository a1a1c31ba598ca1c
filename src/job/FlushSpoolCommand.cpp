// colmet-job flush-spool: send what samplers left in the node spool
// (node/delivery/SpoolFlush.hpp) and say what happened to every file.
#include "job/FlushSpoolCommand.hpp"

#include "common/log.hpp"
#include "job/CommandLine.hpp"
#include "job/HookSupport.hpp"
#include "job/StartCommand.hpp"
#include "node/delivery/SpoolFlush.hpp"

namespace colmet::job {

int flush_spool_command(const FlushSpoolOptions &o)
{
    if (o.hook || !o.log_file.empty())
        setup_command_log(o.log_file.empty() ? k_default_log_file : o.log_file, o.hook, o.verbosity);
    else
        log::setup("job", std::max(o.verbosity, 1));
    const std::string dir = spool_dir_of(o.spool_dir, o.config);
    if (dir.empty()) {
        spdlog::info("the node spool is off (spool-dir = none): nothing to flush");
        return 0;
    }
    node::FlushOptions options;
    options.spool_dir = dir;
    options.wait_s = o.wait_s;
    options.max_age_s = o.max_age_s;
    int rc = 0;
    try {
        auto totals = node::flush_spool(options);
        if (!totals) {
            spdlog::error("flush-spool: {}", totals.error().message());
            rc = 1;
        } else {
            const auto &t = *totals;
            // The timer runs it every 5 minutes: an empty spool is not worth a line in the log.
            spdlog::log(o.hook && t.files == 0 ? spdlog::level::debug : spdlog::level::info,
                        "flush-spool {}: {} files: {} delivered, {} kept for later, {} in use, {} damaged; {} "
                        "messages, {} acknowledged, {} expired, {} damaged records",
                        dir, t.files, t.delivered, t.kept, t.busy, t.damaged, t.messages, t.acknowledged, t.expired,
                        t.damaged_records);
            rc = t.damaged > 0 ? 1 : t.kept + t.busy > 0 ? k_exit_spool_kept : 0;
        }
    } catch (const std::exception &e) {
        spdlog::error("flush-spool failed: {}", e.what());
        rc = 70;
    }
    return o.hook ? 0 : rc;
}

CLI::App *add_flush_spool_command(CLI::App &app, FlushSpoolOptions &o)
{
    auto *cmd = app.add_subcommand(
        "flush-spool", "Send the node spool's data to the collectors; delete each file once all of it is acknowledged");
    cmd->add_option("--spool-dir", o.spool_dir,
                    "The node spool (default: [node] spool-dir of the config, else /var/spool/colmet)");
    cmd->add_option("-c,--config", o.config, "colmet.conf to read ([node] spool-dir)")->capture_default_str();
    cmd->add_option("--wait", o.wait_s, "Seconds to wait for the acknowledgements of each file")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    cmd->add_option("--max-age", o.max_age_s,
                    "Drop messages older than this many seconds (the collector's --max-message-delay refuses them)")
        ->check(CLI::Range(60.0, 31536000.0))
        ->capture_default_str();
    cmd->add_flag("--hook", o.hook, "Hook mode: always exit 0, log to the log file only");
    cmd->add_option("--log-file", o.log_file,
                    "Log to this file (default: stderr; in hook mode "
                    "/var/log/colmet/colmet.log)");
    add_verbose_flag(*cmd, o.verbosity);
    return cmd;
}

}  // namespace colmet::job
