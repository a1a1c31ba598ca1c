// The CPU time of chosen leaves below a job's cgroup v2 directory, summed,
// where the directory also holds work that is not the job's own: Slurm's
// cgroup/v2 plugin runs each step's daemon (slurmstepd) in
// job_<id>/step_<n>/slurm, beside the tasks in job_<id>/step_<n>/user, so
// the job's own CPU time is that of its user leaves (what Slurm's
// jobacct_gather/cgroup counts too).
//
// Leaves come and go with the steps: one that is removed keeps the last
// value read from it (a step's user leaf no longer grows once its tasks
// have exited; the sampler takes a sample then, before Slurm removes it),
// so the sum never goes backwards.
#pragma once

#include "node/backends/cgroup_cpu/cpu_parsers.hpp"
#include "node/backends/support/StatusText.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace colmet::node::backends {

class CpuLeaves {
public:
    // patterns: glob(7) patterns relative to dir ("step_*/user", "user"), in
    // the form cgroup::parse_level() takes (a pattern it refuses is ignored).
    CpuLeaves(std::filesystem::path dir, const std::vector<std::string> &patterns);

    struct Sum {
        uint64_t usage_usec = 0;
        uint64_t user_usec = 0;
        uint64_t system_usec = 0;
    };
    // Read every leaf's cpu.stat now; the sum of those and of the leaves
    // seen before that are gone. Unreadable leaves keep their last value and
    // are reported in problems.
    Sum read(StatusText &problems);

private:
    std::filesystem::path m_dir;
    std::vector<std::string> m_patterns;
    std::map<std::string, V2CpuStat> m_last;  // by leaf path, every leaf ever seen
};

}  // namespace colmet::node::backends
