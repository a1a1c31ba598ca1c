// The summary colmet-job run prints when the command ends.
#pragma once

#include "collector/summary/JobSummary.hpp"

#include <filesystem>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

// Human-readable sizes and durations: "212.4 MiB", "1 h 02 min", "3.21 s".
std::string human_bytes(double bytes);
std::string human_seconds(double seconds);
// Energy in joules and kilowatt-hours: "5400.0 J = 0.001500 kWh".
std::string human_energy(double joules);

// Print the job's summary to stderr, read from the summary's JSON the
// collector leaves beside the job's file (job_file(dir, id,
// JobFile::summary)). When it is unknown (an external collector), say where
// the data went instead.
void print_summary(const std::string &job_id, const std::filesystem::path &file, int wait_status, double wall_seconds,
                   const std::string &external_uri);

// The lines of a job's summary (CPU time, efficiency, memory, I/O, energy,
// samples, warnings, waste flags, the data file), as print_summary prints
// them after its first line.
std::string summary_lines(const collector::JobSummary &summary);

// colmet-job summary: wait up to wait_s seconds for the job's summary JSON
// (the collector writes it when the job's end arrives) and print it to
// stderr, first line "colmet: job <id> ended after <duration>"; what went
// wrong otherwise. 0 when printed, 1 when not.
int show_summary(const std::filesystem::path &file, double wait_s);

struct SummaryOptions {
    std::string file;  // the job's <stem>.json
    double wait_s = 10;
};
// Declares `summary` and its options on `app`, filled into `options`.
CLI::App *add_summary_command(CLI::App &app, SummaryOptions &options);

}  // namespace colmet::job
