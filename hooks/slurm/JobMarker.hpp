// The plugin's per-job marker: <run_dir>/slurm-<job>.colmet, written by the
// job prolog when the job is sampled and holding the spec it was started
// with; removed by the job epilog. slurmstepd reads it to know that the
// job's steps are to be sampled too (the prolog's environment, where the
// --colmet choice is visible, is not available there for steps started from
// a batch script).
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace colmet::spank {

std::filesystem::path marker_path(const std::filesystem::path &run_dir, uint32_t job_id);

// Creates run_dir (0755) if needed; replaces the marker atomically.
Result<void> write_marker(const std::filesystem::path &run_dir, uint32_t job_id, const std::string &spec);

// The spec in the marker, or nothing when the job has no marker.
std::optional<std::string> read_marker(const std::filesystem::path &run_dir, uint32_t job_id);

// False when <run_dir>/slurm-<job>.context exists already (another step sent
// the job's context to its sampler); true for the one caller that creates
// it, and when it cannot be made at all (send anyway). remove_marker removes
// it.
bool claim_context(const std::filesystem::path &run_dir, uint32_t job_id);

// A missing marker is fine.
Result<void> remove_marker(const std::filesystem::path &run_dir, uint32_t job_id);

// Sampler ids "<job>.<step>" that still have a pid file <id>.pid in run_dir
// (steps whose slurmstepd died before it could stop them).
std::vector<std::string> leftover_step_samplers(const std::filesystem::path &run_dir, uint32_t job_id);

}  // namespace colmet::spank
