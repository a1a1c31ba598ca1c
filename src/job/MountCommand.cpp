#include "job/MountCommand.hpp"

#include "cgroup/PerfEventHierarchy.hpp"

#include <cstdio>

namespace colmet::job {

int mount_command(const MountOptions &options)
{
    auto dir = cgroup::ensure_perf_event_hierarchy(options.cgroup_root);
    if (!dir) {
        std::fprintf(stderr, "colmet-job mount-perf-event: %s\n", dir.error().message().c_str());
        return 69;
    }
    std::printf("perf_event cgroups: %s%s\n", dir->c_str(),
                *dir == options.cgroup_root ? " (cgroup v2: perf_event is part of the unified hierarchy)" : "");
    return 0;
}

}  // namespace colmet::job
