// The pids of a job: every cgroup.procs of the job's cgroup and of its
// descendants. Schedulers may nest cgroups inside the job's (Slurm puts
// tasks in job_N/step_M/task_K), and the cgroup backends' numbers are
// hierarchical, so the process list is too.
//
// The job's directory stays open; sub-directories are walked with openat()
// and getdents64() into stack buffers each time, so listing allocates only
// when the pid list or the read buffer must grow.
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "node/backends/support/StatusText.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace colmet::node::backends {

class CgroupProcs {
public:
    // Nesting deeper than this below the job's directory is not walked.
    static constexpr int k_max_depth = 8;

    // Open the job's cgroup directory; fails when it or its cgroup.procs
    // cannot be opened.
    static Result<CgroupProcs> open(const std::filesystem::path &dir);

    // Replace `pids` with the sorted, de-duplicated pids of the cgroup and its
    // descendants. Returns false (and says why in `status`) only when the
    // job's own cgroup.procs cannot be read; sub-cgroups removed while they
    // are walked are skipped. The walk stops once `enough` pids are found
    // (at least that many: a cgroup.procs is read whole; 1: "any process?").
    bool list(std::vector<pid_t> &pids, StatusText &status, size_t enough = SIZE_MAX) noexcept;

private:
    explicit CgroupProcs(UniqueFd dir) : m_dir(std::move(dir)) {}
    // 0 or the errno of reading <dirfd>/cgroup.procs.
    int read_procs(int dirfd, std::vector<pid_t> &pids);
    void walk_children(int dirfd, int depth, std::vector<pid_t> &pids, size_t enough);

    UniqueFd m_dir;
    std::string m_buf;
};

}  // namespace colmet::node::backends
