// Live cgroup v1 jobs for the perfhw tests (root only). A RealJob owns a job
// cgroup "/colmet-perfcount-<pid>-<name>" in every mounted v1 hierarchy (and
// its perf_event directory, made by the backend factory) plus the processes
// it forks; its destructor kills them and removes every directory, whatever
// the test's outcome. The perf_event hierarchy itself stays mounted.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"
#include "node/backends/perfhw/PerfhwBackend.hpp"
#include "perf/PerfEventSpec.hpp"

#include <gtest/gtest.h>

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::test {

inline const std::filesystem::path k_cgroup_root = "/sys/fs/cgroup";

// Why the live tests cannot run here (empty when they can).
std::string live_skip_reason();

// Skip the calling test, with the reason, when the live tests cannot run.
#define SKIP_UNLESS_LIVE()                                                                                             \
    do {                                                                                                               \
        if (auto why = colmet::test::live_skip_reason(); !why.empty())                                                 \
            GTEST_SKIP() << why;                                                                                       \
    } while (0)

// The perfhw backend behind a backend the factory made.
inline node::backends::perfhw::PerfhwBackend &as_perfhw(node::MetricBackend &b)
{
    return dynamic_cast<node::backends::perfhw::PerfhwBackend &>(b);
}

// Software events built directly (no name resolution needed).
perf::PerfEventSpec software_event(std::string name, uint64_t config);
perf::PerfEventSpec task_clock();  // seconds
perf::PerfEventSpec hardware_event(std::string name, uint64_t config);

// Open fds of this process that are perf events ("anon_inode:[perf_event]").
size_t count_perf_fds();

// CPU time a live process has used, from /proc/<pid>/schedstat (seconds).
double cpu_seconds_of(pid_t pid);

std::vector<double> sample(node::MetricBackend &backend);
double value(const node::MetricBackend &backend, const std::vector<double> &values, std::string_view metric);

class RealJob {
public:
    explicit RealJob(std::string_view name);
    ~RealJob();
    RealJob(const RealJob &) = delete;
    RealJob &operator=(const RealJob &) = delete;

    // Make the v1 cgroups (CgroupFs::create).
    Result<void> create();
    const cgroup::CgroupPaths &paths() const { return m_paths; }
    node::JobContext context() const;
    // The job's path relative to each hierarchy root, without the leading '/'.
    std::string name() const { return m_relative.substr(1); }

    // Fork a process that waits for go(), burns `burn_ms` of CPU, reports its
    // total CPU time and then sleeps; attached to the job unless outside.
    Result<pid_t> spawn_burner(int burn_ms);
    // Fork a process spinning until killed, outside the job.
    pid_t spawn_spinner();
    void go();
    // The burner's CPU time in seconds, once it has burnt (NaN on timeout).
    double wait_report(int timeout_ms);
    void track(pid_t pid) { m_children.push_back(pid); }

private:
    std::string m_relative;
    cgroup::CgroupPaths m_paths;
    std::vector<pid_t> m_children;
    UniqueFd m_go_write;
    UniqueFd m_report_read;
};

}  // namespace colmet::test
