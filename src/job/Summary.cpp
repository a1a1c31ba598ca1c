#include "job/Summary.hpp"

#include "collector/summary/JobSummary.hpp"
#include "job/CommandLine.hpp"

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sys/wait.h>
#include <thread>

namespace colmet::job {

std::string human_bytes(double bytes)
{
    if (std::isnan(bytes))
        return "unknown";
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

std::string human_seconds(double seconds)
{
    if (std::isnan(seconds))
        return "unknown";
    char buf[48];
    if (seconds < 120)
        std::snprintf(buf, sizeof buf, "%.2f s", seconds);
    else if (seconds < 7200)
        std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
    else
        std::snprintf(buf, sizeof buf, "%d h %02d min", static_cast<int>(seconds) / 3600,
                      (static_cast<int>(seconds) / 60) % 60);
    return buf;
}

std::string human_energy(double joules)
{
    if (std::isnan(joules))
        return "unknown";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f J = %.6f kWh", joules, joules / 3.6e6);
    return buf;
}

static std::string describe_status(int wait_status)
{
    if (WIFEXITED(wait_status))
        return "exit status " + std::to_string(WEXITSTATUS(wait_status));
    if (WIFSIGNALED(wait_status))
        return std::string("killed by signal ") + std::to_string(WTERMSIG(wait_status));
    return "unknown status";
}

namespace {

// printf into a string.
__attribute__((format(printf, 2, 3))) void add_line(std::string &out, const char *format, ...)
{
    char buf[1200];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    out += buf;
}

}  // namespace

std::string summary_lines(const collector::JobSummary &s)
{
    std::string out;
    add_line(out, "  CPU time        %s (user %s, system %s)\n", human_seconds(s.cpu_time_s).c_str(),
             human_seconds(s.user_time_s).c_str(), human_seconds(s.system_time_s).c_str());
    if (!std::isnan(s.cpu_efficiency))
        add_line(out, "  CPU efficiency  %.1f %% of the job's CPUs over %s\n", s.cpu_efficiency * 100,
                 human_seconds(s.duration_s).c_str());
    add_line(out, "  peak memory     %s\n", human_bytes(s.peak_memory_bytes).c_str());
    add_line(out, "  block I/O       read %s, written %s\n", human_bytes(s.read_bytes).c_str(),
             human_bytes(s.write_bytes).c_str());
    add_line(out, "  file I/O        read %s, written %s (read/write calls)\n", human_bytes(s.read_chars).c_str(),
             human_bytes(s.write_chars).c_str());
    if (!std::isnan(s.energy_j))
        add_line(out, "  energy          %s (RAPL package + DRAM of the node, over %s)\n",
                 human_energy(s.energy_j).c_str(), human_seconds(s.duration_s).c_str());
    if (!std::isnan(s.job_energy_j))
        add_line(out, "  job's energy    %s (its share: idle baseline by allocated CPUs, the rest by CPU time)\n",
                 human_energy(s.job_energy_j).c_str());
    add_line(out, "  samples         %llu received, %llu lost\n", static_cast<unsigned long long>(s.samples_received),
             static_cast<unsigned long long>(s.samples_lost));
    if (!s.cgroup_warning.empty())
        add_line(out, "  WARNING         %s\n", s.cgroup_warning.c_str());
    if (s.hosts_without_job_end > 0)
        add_line(out, "  WARNING         no job_end from %llu of %llu hosts: the summary is from what arrived\n",
                 static_cast<unsigned long long>(s.hosts_without_job_end), static_cast<unsigned long long>(s.hosts));
    for (const auto &flag : s.flags)
        add_line(out, "  FLAG            %s: %s\n", flag.name.c_str(), flag.text.c_str());
    if (!s.file.empty())
        add_line(out, "  data            %s\n", s.file.c_str());
    return out;
}

void print_summary(const std::string &job_id, const std::filesystem::path &file, int wait_status, double wall_seconds,
                   const std::string &external_uri)
{
    std::FILE *out = stderr;
    std::fprintf(out, "\ncolmet: job %s finished (%s) after %s\n", job_id.c_str(), describe_status(wait_status).c_str(),
                 human_seconds(wall_seconds).c_str());
    if (file.empty()) {
        std::fprintf(out, "  data sent to the collector at %s\n", external_uri.c_str());
        return;
    }
    auto summary = collector::read_summary_file(file);
    if (!summary) {
        std::fprintf(out, "  no summary: %s\n", summary.error().message().c_str());
        return;
    }
    std::fputs(summary_lines(*summary).c_str(), out);
}

int show_summary(const std::filesystem::path &file, double wait_s)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    Result<collector::JobSummary> summary = collector::read_summary_file(file);
    while (!summary && summary.error().code() == Errc::not_found && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        summary = collector::read_summary_file(file);
    }
    if (!summary) {
        std::fprintf(stderr, "colmet: no summary of %s within %g s: %s\n", file.c_str(), wait_s,
                     summary.error().message().c_str());
        return 1;
    }
    std::fprintf(stderr, "colmet: job %s ended after %s\n%s", summary->job_id.c_str(),
                 human_seconds(summary->duration_s).c_str(), summary_lines(*summary).c_str());
    return 0;
}
CLI::App *add_summary_command(CLI::App &app, SummaryOptions &o)
{
    auto *cmd = app.add_subcommand(
        "summary", "Print a job's summary from its JSON file, waiting for the collector to write it (Slurm's srun)");
    cmd->add_option("file", o.file, "The job's summary, <stem>.json beside its HDF5 file")->required();
    cmd->add_option("--wait", o.wait_s, "Seconds to wait for the summary when the job has just ended")
        ->check(CLI::Range(0.0, 600.0))
        ->capture_default_str();
    return cmd;
}

}  // namespace colmet::job
