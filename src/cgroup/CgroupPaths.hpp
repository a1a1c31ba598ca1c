// Where one job's cgroup lives, for cgroup v1 (one directory per controller)
// and cgroup v2 (one directory). Produced by CgroupFs::resolve().
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colmet::cgroup {

enum class Version { v1, v2 };

struct CgroupPaths {
    Version version = Version::v2;
    // The job's path relative to the hierarchy root, e.g. "/oar/alice_42".
    std::string relative;
    // cgroup v2: the job's directory.
    std::filesystem::path unified;
    // cgroup v1: controller name -> the job's directory in that controller's
    // hierarchy ("cpuacct" -> /sys/fs/cgroup/cpuacct/oar/alice_42). Only
    // controllers that are mounted are listed.
    std::vector<std::pair<std::string, std::filesystem::path>> controllers;

    // The directory holding the given controller's files for this job: for v2
    // the unified directory; for v1 the controller's directory, or an empty
    // path when that controller is not mounted.
    std::filesystem::path dir_for(std::string_view controller) const;

    // Every directory holding the job: the unified one (v2) or one per
    // mounted controller (v1). Co-mounted controllers may name the same
    // directory twice; whoever walks them must tolerate that.
    std::vector<std::filesystem::path> directories() const;
};

}  // namespace colmet::cgroup
