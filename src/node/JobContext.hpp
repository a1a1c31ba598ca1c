// What a backend needs to know about the job it samples.
#pragma once

#include "cgroup/CgroupPaths.hpp"

#include <filesystem>
#include <string>

namespace colmet::node {

struct JobContext {
    std::string job_id;
    cgroup::CgroupPaths cgroup;
    std::filesystem::path proc_root = "/proc";
};

}  // namespace colmet::node
