#include "job/MountCommand.hpp"

#include "cgroup/PerfEventHierarchy.hpp"
#include "job/CommandLine.hpp"

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

CLI::App *add_mount_command(CLI::App &app, MountOptions &o)
{
    auto *cmd = app.add_subcommand(
        "mount-perf-event", "Mount the perf_event cgroup v1 hierarchy when nobody has (at boot, before any job)");
    cmd->add_option("--cgroup-root", o.cgroup_root, "Where the cgroup file systems are mounted")->capture_default_str();
    return cmd;
}

}  // namespace colmet::job
