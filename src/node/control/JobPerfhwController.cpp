#include "node/control/PerfhwController.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "node/backends/perfhw/MappingFile.hpp"
#include "node/backends/perfhw/PerfhwBackend.hpp"
#include "perf/PerfEventSpec.hpp"
#include "spec/event_list.hpp"

namespace colmet::node::control {

namespace perfhw = backends::perfhw;

Result<std::unique_ptr<MetricBackend>> JobPerfhwController::build(const std::vector<std::string> &names)
{
    auto split = spec::split_event_list(names);
    if (!split)
        return split.error();
    if (split->empty())
        return Error::invalid("no event given");
    std::vector<perf::PerfEventSpec> specs;
    for (const auto &name : *split) {
        auto spec = perf::resolve_event(name, m_options.sysfs_root);
        if (!spec)
            return spec.error();
        specs.push_back(std::move(*spec));
    }
    auto backend = perfhw::make_perfhw_backend(m_ctx, specs, m_options.cgroup_root, m_options.sysfs_root);
    if (!backend)
        return backend.error();
    auto *b = static_cast<perfhw::PerfhwBackend *>(backend->get());
    if (!b->open_problems().empty())
        spdlog::warn("perfhw: {}", b->open_problems());
    if (!m_options.mapping_dir.empty()) {
        auto file = perfhw::write_mapping_file(m_options.mapping_dir, b->metrics(), realtime_ns());
        if (file)
            spdlog::info("perfhw mapping written to {}", file->string());
        else
            spdlog::warn("perfhw mapping file: {}", file.error().message());
    }
    return backend;
}

Result<std::unique_ptr<MetricBackend>> JobPerfhwController::relocate(const cgroup::CgroupPaths &where,
                                                                     const std::vector<std::string> &names,
                                                                     MetricBackend *current)
{
    m_ctx.cgroup = where;
    auto *running = static_cast<perfhw::PerfhwBackend *>(current);
    // cgroup v1: the counters are on colmet's own perf_event directory,
    // where the hooks put the job's tasks, wherever the other hierarchies
    // are. v2: on the job's one directory.
    if (running != nullptr && (where.version != cgroup::Version::v2 || running->perf_dir() == where.unified))
        return std::unique_ptr<MetricBackend>();
    auto fresh = build(names);
    if (!fresh)
        return fresh.error();
    if (running != nullptr)
        static_cast<perfhw::PerfhwBackend &>(**fresh).continue_from(*running);
    spdlog::info("perfhw: counting {} on {}", text::join(names, ","),
                 static_cast<perfhw::PerfhwBackend &>(**fresh).perf_dir().string());
    return fresh;
}

void JobPerfhwController::release(MetricBackend &backend) noexcept
{
    static_cast<perfhw::PerfhwBackend &>(backend).release();
}

Result<void> JobPerfhwController::reopen(MetricBackend &backend)
{
    return static_cast<perfhw::PerfhwBackend &>(backend).reopen();
}

}  // namespace colmet::node::control
