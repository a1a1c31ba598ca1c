// What a backend needs to know about the job it samples.
#pragma once

#include "cgroup/CgroupPaths.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace colmet::node {

struct JobContext {
    std::string job_id;
    cgroup::CgroupPaths cgroup;
    std::filesystem::path proc_root = "/proc";
    // cgroup v2: glob patterns of the leaves below the job's directory that
    // hold the job's own work ("step_*/user" for a Slurm job: not its step
    // daemons); its CPU time is theirs, summed. Empty: the whole directory.
    std::vector<std::string> cpu_leaves;
};

}  // namespace colmet::node
