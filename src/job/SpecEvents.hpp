// Whether a job spec's perf events exist on this node: colmet-job start's
// check before it starts a sampler (the spec's syntax is spec/JobSpec.hpp's).
#pragma once

#include "common/result.hpp"
#include "spec/JobSpec.hpp"

#include <string>

namespace colmet::job {

// Event names resolved the way colmet-node resolves them (colmet names,
// pmu/event/, libpfm4 when built with it). sysfs_root: usually "/sys".
Result<void> check_spec_events(const spec::JobSpec &spec, const std::string &sysfs_root);

}  // namespace colmet::job
