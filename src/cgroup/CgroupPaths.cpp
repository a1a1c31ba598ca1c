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

} // namespace colmet::cgroup
