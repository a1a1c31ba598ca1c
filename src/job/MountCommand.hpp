// colmet-job mount-perf-event: mount the perf_event cgroup v1 hierarchy when
// nobody has (hybrid hosts), as colmet-perf-event.service does at boot, so
// that the schedulers find it before their first job.
#pragma once

#include <string>

namespace colmet::job {

struct MountOptions {
    std::string cgroup_root = "/sys/fs/cgroup";
};

int mount_command(const MountOptions &options);

}  // namespace colmet::job
