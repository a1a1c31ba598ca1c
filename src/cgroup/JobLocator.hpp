// Finding a job's cgroup directories from the job's own processes, never
// from a guessed path: the kernel's /proc/<pid>/cgroup says where each
// process is in every hierarchy, and the job's level (the last components
// of its directory: "job_7", "job_7/step_0", "alice_42") cuts that path at
// the job. Schedulers do not use the same path in every hierarchy (Slurm's
// cgroup plugins put cpuacct and memory under /slurm_<node>/.../task_<n>,
// colmet's perf_event directory is /slurm/...), so each hierarchy gets its
// own directory.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"

#include <sys/types.h>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace colmet::cgroup {

class JobLocator {
public:
    // level: parse_level() of the job's level, never empty.
    JobLocator(std::filesystem::path cgroup_root, std::filesystem::path proc_root, std::vector<std::string> level);

    const std::vector<std::string> &level() const { return m_level; }

    // Where the kernel has put `pids`: on cgroup v2 the unified directory, on
    // v1 one directory per controller colmet reads (v1_controllers()) that is
    // mounted under the root, each the level directory of the first pid whose
    // path in that hierarchy passes through the level. A controller in which
    // no pid does is left out: the scheduler made no job directory there.
    // `relative` is the first directory found. Errc::not_found when no pid
    // shows the level in any hierarchy (they exited, or are not the job's).
    Result<CgroupPaths> locate(std::span<const pid_t> pids) const;

    // The same for one process's /proc/<pid>/cgroup text (for tests and for
    // callers that read it themselves).
    CgroupPaths locate_text(std::string_view proc_cgroup) const;

private:
    std::filesystem::path m_root;
    std::filesystem::path m_proc;
    std::vector<std::string> m_level;
};

}  // namespace colmet::cgroup
