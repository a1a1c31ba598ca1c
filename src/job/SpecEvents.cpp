#include "job/SpecEvents.hpp"

#include "perf/PerfEventSpec.hpp"

namespace colmet::job {

Result<void> check_spec_events(const spec::JobSpec &spec, const std::string &sysfs_root)
{
    for (const auto &name : spec.events)
        if (auto r = perf::resolve_event(name, sysfs_root); !r)
            return r.error();
    return ok();
}

}  // namespace colmet::job
