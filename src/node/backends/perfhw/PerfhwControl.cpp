#include "node/backends/perfhw/PerfhwControl.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "node/backends/perfhw/MappingFile.hpp"
#include "node/backends/perfhw/PerfhwBackend.hpp"
#include "perf/PerfEventSpec.hpp"
#include "spec/event_list.hpp"

namespace colmet::node::backends {
namespace perfhw {

Result<std::unique_ptr<MetricBackend>> PerfhwControl::build(const std::vector<std::string> &names)
{
    auto split = spec::split_event_list(names);
    if (!split)
        return split.error();
    auto specs = perf::resolve_events(*split, m_settings.sysfs_root);
    if (!specs)
        return specs.error();
    auto backend = make_perfhw_backend(m_ctx, *specs, m_settings.cgroup_root, m_settings.sysfs_root);
    if (!backend)
        return backend.error();
    auto *b = static_cast<PerfhwBackend *>(backend->get());
    if (!b->open_problems().empty())
        spdlog::warn("perfhw: {}", b->open_problems());
    spdlog::info("backend perfhw: {} events on {} CPUs", specs->size(), b->cpus().size());
    if (!m_settings.mapping_dir.empty()) {
        auto file = write_mapping_file(m_settings.mapping_dir, b->metrics(), realtime_ns());
        if (file)
            spdlog::info("perfhw mapping written to {}", file->string());
        else
            spdlog::warn("perfhw mapping file: {}", file.error().message());
    }
    return backend;
}

Result<std::unique_ptr<MetricBackend>>
PerfhwControl::relocate(const cgroup::CgroupPaths &where, const std::vector<std::string> &names, MetricBackend *current)
{
    m_ctx.cgroup = where;
    auto *running = static_cast<PerfhwBackend *>(current);
    // cgroup v1: the counters are on colmet's own perf_event directory,
    // where the hooks put the job's tasks, wherever the other hierarchies
    // are. v2: on the job's one directory.
    if (running != nullptr && (where.version != cgroup::Version::v2 || running->perf_dir() == where.unified))
        return std::unique_ptr<MetricBackend>();
    auto fresh = build(names);
    if (!fresh)
        return fresh.error();
    if (running != nullptr)
        static_cast<PerfhwBackend &>(**fresh).continue_from(*running);
    spdlog::info("perfhw: counting {} on {}", text::join(names, ","),
                 static_cast<PerfhwBackend &>(**fresh).perf_dir().string());
    return fresh;
}

namespace {

std::unique_ptr<control::PerfhwController> make_perfhw_control(const JobContext &ctx, const CounterSettings &settings)
{
    return std::make_unique<PerfhwControl>(ctx, settings);
}

}  // namespace
}  // namespace perfhw

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_perfhw_factory;
constexpr BackendFactory k_perfhw_factory =
    counter_backend_factory(*spec::backend_info("perfhw"), &perfhw::make_perfhw_control);

}  // namespace colmet::node::backends
