// The cgroup file system under one root (default /sys/fs/cgroup): layout
// detection, resolving a job's cgroup, and creating/removing job cgroups.
// Every path is built from the root given to the constructor, so tests run on
// fixture trees.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace colmet::cgroup {

// The pids a cgroup.procs (or tasks) file lists; Errc::parse on a line that
// is not a pid.
Result<std::vector<pid_t>> read_pids(const std::filesystem::path &procs_file);

// The v1 controllers colmet reads or creates job directories in.
inline const std::vector<std::string> &v1_controllers()
{
    // perf_event counts only where it is mounted (colmet-job run --enable-perfhw mounts it).
    static const std::vector<std::string> k = {"cpuacct", "cpu", "memory", "blkio", "pids", "cpuset", "perf_event"};
    return k;
}

class CgroupFs {
public:
    explicit CgroupFs(std::filesystem::path root = "/sys/fs/cgroup");

    const std::filesystem::path &root() const { return m_root; }

    // v2 when <root>/cgroup.controllers exists, v1 otherwise (a hybrid
    // layout with v1 controllers and an empty unified tree counts as v1).
    Version detect() const;

    // The controllers of v1_controllers() whose hierarchy is mounted under
    // the root (<root>/<name>/cgroup.procs exists; a symlink such as
    // cpu -> cpu,cpuacct counts). Empty on a pure v2 layout.
    std::vector<std::string> mounted_v1_controllers() const;

    // The "cgroup.procs" files of the hierarchies' roots: the root itself
    // on v2, every mounted v1 hierarchy (and the unified tree of a hybrid
    // layout) otherwise. Where a process goes to leave every job's cgroup.
    std::vector<std::filesystem::path> root_procs_files() const;

    // Resolve a job's cgroup given either a path relative to the hierarchy
    // ("/oar/alice_42", "oar/alice_42") or an absolute directory under the
    // root ("/sys/fs/cgroup/system.slice/job_5" for v2,
    // "/sys/fs/cgroup/memory/oar/alice_42" for v1). Fails with not_found
    // when the job's directory exists in no hierarchy.
    Result<CgroupPaths> resolve(const std::string &job_cgroup) const;

    // Create the job's cgroup at `relative` in every v1 controller listed in
    // v1_controllers() that is mounted (or the v2 directory, enabling the
    // cpu, memory, io and pids controllers on the way when possible).
    // Copies cpuset.cpus/cpuset.mems from the parent for v1 cpuset.
    // Idempotent. On failure the directories already made are left in
    // place (they may predate the call); remove() them if they are yours.
    Result<CgroupPaths> create(const std::string &relative) const;

    // Move a process into the job's cgroup (every hierarchy).
    static Result<void> attach(const CgroupPaths &paths, pid_t pid);

    // PIDs listed in the job's cgroup.procs (first hierarchy that has one).
    static Result<std::vector<pid_t>> procs(const CgroupPaths &paths);

    // SIGKILL every process left in the cgroup, wait (bounded by timeout_ms)
    // until it is empty, then rmdir it in every hierarchy. Child cgroups are
    // removed first; directories already gone are fine. Refuses a hierarchy
    // root (Errc::invalid); never signals the calling process, nor pids read
    // from a file system that is not cgroupfs (fixture trees).
    static Result<void> remove(const CgroupPaths &paths, int timeout_ms = 2000);

private:
    std::filesystem::path m_root;
};

}  // namespace colmet::cgroup
