// Lists of perf event names as users write them (colmet-node's
// --perfhw-list, a job spec's perfhw:..., colmet-ctl's perfhw change): the
// syntax and the bound only. Whether an event exists on a node is the
// perfhw backend's question (perf/PerfEventSpec.hpp).
#pragma once

#include "common/result.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace colmet::spec {

// Most events one list may hold (and so one job can count).
inline constexpr size_t k_max_events = 64;

// Split "--perfhw-list" values: each argument may itself hold comma- or
// space-separated names; commas between the slashes of "pmu/event,k=v/"
// belong to the name. Empty names are dropped; a name given twice, an
// unclosed "pmu/..." and more than k_max_events names are errors.
Result<std::vector<std::string>> split_event_list(const std::vector<std::string> &args);

}  // namespace colmet::spec
