// How the sampler opens, rebuilds and moves its counter backend (perfhw)
// when the job's cgroups are found or colmet-ctl asks for other events. An
// interface so that the sampler's control logic can be tested without perf
// counters; the counter backend's factory makes the real one
// (node/backends/perfhw/PerfhwControl.hpp). Pause and resume are the
// backend's own (MetricBackend::pause, resume).
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"
#include "node/MetricBackend.hpp"

#include <memory>
#include <string>
#include <vector>

namespace colmet::node::control {

class PerfhwController {
public:
    virtual ~PerfhwController() = default;
    // Resolve the names (as at start) and open a new backend counting them.
    // Nothing the sampler holds is touched. Unknown names are Errc::invalid
    // naming the event; events that open nowhere Errc::unsupported.
    virtual Result<std::unique_ptr<MetricBackend>> build(const std::vector<std::string> &names) = 0;
    // The job's cgroups changed (found after the start, or moved): count
    // `names` where they are now. `current` is the running backend, or null
    // when none could be opened before (a Slurm job's directory that did not
    // exist yet on cgroup v2). A new backend to put in its place (counting
    // on from current's totals), or null when current already counts the
    // right directory. Later build() calls count in `where` too.
    virtual Result<std::unique_ptr<MetricBackend>>
    relocate(const cgroup::CgroupPaths &where, const std::vector<std::string> &names, MetricBackend *current) = 0;
};

}  // namespace colmet::node::control
