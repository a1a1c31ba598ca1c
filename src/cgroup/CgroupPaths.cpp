#include "cgroup/CgroupPaths.hpp"

namespace colmet::cgroup {

std::filesystem::path CgroupPaths::dir_for(std::string_view controller) const
{
    if (version == Version::v2)
        return unified;
    for (const auto &[name, dir] : controllers)
        if (name == controller)
            return dir;
    return {};
}

std::vector<std::filesystem::path> CgroupPaths::directories() const
{
    std::vector<std::filesystem::path> dirs;
    if (version == Version::v2) {
        if (!unified.empty())
            dirs.push_back(unified);
        return dirs;
    }
    for (const auto &entry : controllers)
        dirs.push_back(entry.second);
    return dirs;
}

}  // namespace colmet::cgroup
