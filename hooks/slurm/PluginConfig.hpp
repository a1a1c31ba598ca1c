// The plugstack.conf arguments of spank_colmet.so, parsed strictly: every
// argument is key=value, every key is known and given once, every value is
// checked. Pure code, no Slurm header: unit-tested on plain strings.
#pragma once

#include "common/result.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::spank {

enum class Mode {
    opt_in,  // only jobs submitted with --colmet (or SLURM_COLMET) are sampled
    all,     // every job is sampled; --colmet=SPEC still chooses what, --colmet=off opts out
};

struct PluginConfig {
    std::string collector;         // colmet-job --zeromq-uri (empty: colmet-node's default)
    std::string metrics;           // site default SPEC for a bare --colmet (empty: colmet-node's)
    std::optional<double> period;  // colmet-job --sample-period
    std::string cgroup_root = "/sys/fs/cgroup";
    Mode mode = Mode::opt_in;
    std::string run_dir = "/run/colmet";  // colmet-job --run-dir, also holds the plugin's job markers
    std::string colmet_job;               // path of the colmet-job helper
    std::string colmet_ctl;               // path of colmet-ctl (asks the job's sampler for a sample at step end)
    std::string log_file;                 // colmet-job --log-file (empty: colmet-job's default)
    std::string spool_dir;                // colmet-job --spool-dir (empty: colmet-job's default)
    bool steps = true;                    // one extra sampler per srun step ("<job>.<step>")
    double timeout = 10;                  // seconds a colmet-job run may take before it is killed
    // Where srun's host sees the collector's job files (a shared mount);
    // empty: srun prints no summary. summary_wait: how long it waits.
    std::string summary_dir;
    double summary_wait = 10;
};

// One known key, for the error message, the man page test and the README.
struct ConfigKey {
    std::string_view name;
    std::string_view value;  // e.g. "URI", "SECONDS"
    std::string_view description;
};
std::span<const ConfigKey> config_keys();

// Parse plugstack.conf arguments ("collector=tcp://h:5556", ...). The default
// helper paths are given by the caller (the build's install directories).
Result<PluginConfig> parse_config(std::span<const std::string_view> args, std::string default_colmet_job,
                                  std::string default_colmet_ctl = "");

// Convenience for the C ABI: argv as Slurm hands it over.
Result<PluginConfig> parse_config(int argc, char **argv, std::string default_colmet_job,
                                  std::string default_colmet_ctl);

}  // namespace colmet::spank
