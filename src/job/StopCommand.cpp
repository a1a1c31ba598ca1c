#include "job/StopCommand.hpp"

#include "common/log.hpp"
#include "common/names.hpp"
#include "job/CommandLine.hpp"
#include "job/HookSupport.hpp"
#include "job/SamplerRecord.hpp"
#include "job/StartCommand.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

namespace colmet::job {
namespace fs = std::filesystem;

namespace {

bool wait_gone(const SamplerRecord &record, std::chrono::milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (sampler_alive(record)) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

int do_stop(const StopOptions &o)
{
    if (!valid_identifier(o.job_id)) {
        spdlog::error("job id '{}': use 1 to 128 printable ASCII characters without '/'", o.job_id);
        return k_exit_usage;
    }
    const fs::path file = record_path(o.run_dir, o.job_id);
    std::error_code ec;
    if (!fs::exists(file, ec)) {
        spdlog::warn("job {}: no sampler recorded in {}; nothing to stop", o.job_id, file.string());
        return k_exit_failed;
    }
    auto record = read_record(file);
    if (!record) {
        spdlog::error("job {}: {}; removing it", o.job_id, record.error().message());
        fs::remove(file, ec);
        return k_exit_failed;
    }

    // SIGTERM: colmet-node takes its final sample, resets and closes its
    // counters and sends the job end; then SIGKILL if it does not finish.
    if (sampler_alive(*record)) {
        const auto t0 = std::chrono::steady_clock::now();
        ::kill(record->pid, SIGTERM);
        auto timeout = std::chrono::milliseconds(static_cast<long>(o.timeout_s * 1000));
        if (!wait_gone(*record, timeout)) {
            spdlog::warn("job {}: sampler (pid {}) still running {} s after SIGTERM; killing it (its final sample "
                         "is lost)",
                         o.job_id, record->pid, o.timeout_s);
            ::kill(record->pid, SIGKILL);
            if (!wait_gone(*record, std::chrono::seconds(2)))
                spdlog::error("job {}: sampler (pid {}) survives SIGKILL", o.job_id, record->pid);
        } else {
            auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
            spdlog::info("job {}: sampler (pid {}) stopped in {} ms", o.job_id, record->pid, ms.count());
        }
    } else {
        // Normal when the scheduler removed the job's cgroups first (Slurm
        // does before its epilog): the sampler then sent the job's end itself.
        spdlog::info("job {}: the sampler (pid {}) had already exited (its log says why: the job's cgroup "
                     "removed, or an error); cleaning up after it",
                     o.job_id, record->pid);
    }
    (void)remove_created_cgroups(*record, o.run_dir);
    // A sampler that was killed leaves its control socket behind.
    fs::path socket = file;
    socket.replace_extension(".ctl");
    if (fs::is_socket(fs::symlink_status(socket, ec)))
        fs::remove(socket, ec);
    fs::remove(file, ec);
    return 0;
}

}  // namespace

int stop_command(const StopOptions &o)
{
    setup_command_log(o.log_file, o.hook, o.verbosity);
    int rc = 0;
    try {
        rc = do_stop(o);
        flush_spool_in_background(spool_dir_of(o.spool_dir, o.config), o.config, o.log_file);
    } catch (const std::exception &e) {
        spdlog::error("job {}: stop failed: {}", o.job_id, e.what());
        rc = 70;
    }
    return o.hook ? 0 : rc;
}

CLI::App *add_stop_command(CLI::App &app, StopOptions &o)
{
    auto *cmd = app.add_subcommand("stop", "Stop a job's sampler: final sample, counters reset, cleanup");
    cmd->add_option("--job-id", o.job_id, "The scheduler's job id")->required();
    cmd->add_flag("--hook", o.hook, "Hook mode: always exit 0, log to the log file only");
    cmd->add_option("--run-dir", o.run_dir, "Where the <job>.pid records live")->capture_default_str();
    cmd->add_option("--timeout", o.timeout_s, "Seconds to wait after SIGTERM before SIGKILL")
        ->check(CLI::Range(0.1, 60.0))
        ->capture_default_str();
    cmd->add_option("--log-file", o.log_file, "Log file")->capture_default_str();
    cmd->add_option("-c,--config", o.config, "colmet.conf to read ([node] spool-dir)")->capture_default_str();
    cmd->add_option("--spool-dir", o.spool_dir,
                    "The node spool: what the sampler spooled is flushed in the background (default: [node] "
                    "spool-dir of the config, else /var/spool/colmet)");
    add_verbose_flag(*cmd, o.verbosity);
    return cmd;
}

}  // namespace colmet::job
