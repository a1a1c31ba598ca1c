// The counter backend's controller (control/PerfhwController.hpp): opens the
// job's perfhw counters on the events asked for, at start and at
// colmet-ctl's request, writes the mapping file of each set, and moves the
// counters with the job's cgroups. Made by the backend's factory
// (k_perfhw_factory, BackendFactory.hpp).
#pragma once

#include "node/JobContext.hpp"
#include "node/backends/BackendFactory.hpp"
#include "node/control/PerfhwController.hpp"

namespace colmet::node::backends::perfhw {

class PerfhwControl final : public control::PerfhwController {
public:
    PerfhwControl(JobContext ctx, CounterSettings settings) : m_ctx(std::move(ctx)), m_settings(std::move(settings)) {}

    Result<std::unique_ptr<MetricBackend>> build(const std::vector<std::string> &names) override;
    Result<std::unique_ptr<MetricBackend>>
    relocate(const cgroup::CgroupPaths &where, const std::vector<std::string> &names, MetricBackend *current) override;

private:
    JobContext m_ctx;
    CounterSettings m_settings;
};

}  // namespace colmet::node::backends::perfhw
