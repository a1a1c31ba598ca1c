#include "job/StatusCommand.hpp"

#include "job/CommandLine.hpp"
#include "job/SamplerRecord.hpp"
#include "job/StartCommand.hpp"

#include <cstdio>
#include <ctime>
#include <string>

namespace colmet::job {

namespace {

std::string local_time(int64_t ns)
{
    if (ns <= 0)
        return "-";
    time_t t = static_cast<time_t>(ns / 1'000'000'000);
    tm parts{};
    localtime_r(&t, &parts);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &parts);
    return buf;
}

std::string or_dash(const std::string &s) { return s.empty() ? "-" : s; }

}  // namespace

int status_command(const StatusOptions &o)
{
    auto records = list_records(o.run_dir);
    if (records.empty()) {
        std::printf("no sampler running (%s holds no record)\n", o.run_dir.c_str());
        return 0;
    }
    std::printf("%-16s %-12s %-8s %-8s %-7s %-19s %-28s %-24s %s\n", "JOB", "USER", "PID", "STATE", "PERIOD", "STARTED",
                "COLLECTOR", "CGROUP", "SPEC");
    int dead = 0;
    for (const auto &[path, record] : records) {
        if (!record) {
            std::printf("%-16s unreadable record: %s\n", path.stem().c_str(), record.error().message().c_str());
            ++dead;
            continue;
        }
        bool alive = sampler_alive(*record);
        dead += alive ? 0 : 1;
        char period[32];
        std::snprintf(period, sizeof period, "%gs", record->period_s);
        std::printf("%-16s %-12s %-8d %-8s %-7s %-19s %-28s %-24s %s\n", record->job_id.c_str(), record->user.c_str(),
                    record->pid, alive ? "running" : "dead", period, local_time(record->started_ns).c_str(),
                    record->collector.c_str(), record->cgroup.c_str(), or_dash(record->spec).c_str());
    }
    // Non-zero when a record describes a sampler that is gone: worth a look
    // (colmet-job stop --job-id cleans it up).
    return dead == 0 ? 0 : 3;
}

CLI::App *add_status_command(CLI::App &app, StatusOptions &o)
{
    auto *cmd = app.add_subcommand("status", "List the samplers started by colmet-job start");
    cmd->add_option("--run-dir", o.run_dir, "Where the <job>.pid records live")->capture_default_str();
    return cmd;
}

}  // namespace colmet::job
