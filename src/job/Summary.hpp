// The summary colmet-job run prints when the command ends.
#pragma once

#include <filesystem>
#include <string>

namespace colmet::job {

// Human-readable sizes and durations: "212.4 MiB", "1 h 02 min", "3.21 s".
std::string human_bytes(double bytes);
std::string human_seconds(double seconds);
// Energy in joules and kilowatt-hours: "5400.0 J = 0.001500 kWh".
std::string human_energy(double joules);

// Print the job's summary to stderr, read from its HDF5 file. When the file
// is unknown (an external collector), say where the data went instead.
void print_summary(const std::string &job_id, const std::filesystem::path &file, int wait_status, double wall_seconds,
                   const std::string &external_uri);

}  // namespace colmet::job
