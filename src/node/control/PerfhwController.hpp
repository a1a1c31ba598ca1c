// How the sampler rebuilds, pauses and resumes its perfhw backend when
// colmet-ctl asks. An interface so that the sampler's control logic can be
// tested without perf counters; JobPerfhwController is the real one.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::control {

class PerfhwController {
public:
    virtual ~PerfhwController() = default;
    // Resolve the names (resolve_event, as at start) and open a new backend
    // counting them. Nothing the sampler holds is touched. Unknown names are
    // Errc::invalid naming the event; events that open nowhere Errc::unsupported.
    virtual Result<std::unique_ptr<MetricBackend>> build(const std::vector<std::string> &names) = 0;
    // Release the counters of a backend build() (or the factory) made.
    virtual void release(MetricBackend &backend) noexcept = 0;
    // Open them again.
    virtual Result<void> reopen(MetricBackend &backend) = 0;
    // The job's cgroups changed (found after the start, or moved): count
    // `names` where they are now. `current` is the running backend, or null
    // when none could be opened before (a Slurm job's directory that did not
    // exist yet on cgroup v2). A new backend to put in its place (counting
    // on from current's totals), or null when current already counts the
    // right directory. Later build() calls count in `where` too.
    virtual Result<std::unique_ptr<MetricBackend>>
    relocate(const cgroup::CgroupPaths &where, const std::vector<std::string> &names, MetricBackend *current) = 0;
};

struct JobPerfhwOptions {
    std::filesystem::path cgroup_root = "/sys/fs/cgroup";
    std::filesystem::path sysfs_root = "/sys";
    std::filesystem::path mapping_dir;  // write a new perfhw_mapping.<time>.csv per rebuild (empty: none)
};

// The real controller: make_perfhw_backend() for the job; release()/reopen()
// of PerfhwBackend (the backend must be one it or the factory built).
class JobPerfhwController final : public PerfhwController {
public:
    JobPerfhwController(JobContext ctx, JobPerfhwOptions options) : m_ctx(std::move(ctx)), m_options(std::move(options))
    {
    }

    Result<std::unique_ptr<MetricBackend>> build(const std::vector<std::string> &names) override;
    void release(MetricBackend &backend) noexcept override;
    Result<void> reopen(MetricBackend &backend) override;
    Result<std::unique_ptr<MetricBackend>>
    relocate(const cgroup::CgroupPaths &where, const std::vector<std::string> &names, MetricBackend *current) override;

private:
    JobContext m_ctx;
    JobPerfhwOptions m_options;
};

}  // namespace colmet::node::control
