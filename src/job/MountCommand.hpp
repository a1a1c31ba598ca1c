// colmet-job mount-perf-event: mount the perf_event cgroup v1 hierarchy when
// nobody has (hybrid hosts), as colmet-perf-event.service does at boot, so
// that the schedulers find it before their first job.
#pragma once

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

struct MountOptions {
    std::string cgroup_root = "/sys/fs/cgroup";
};

int mount_command(const MountOptions &options);

// Declares `mount-perf-event` and its options on `app`.
CLI::App *add_mount_command(CLI::App &app, MountOptions &options);

}  // namespace colmet::job
