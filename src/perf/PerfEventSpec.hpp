// A hardware or software performance event, resolved from a user-facing name
// to what perf_event_open(2) needs.
#pragma once

#include "common/result.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::perf {

struct PerfEventSpec {
    std::string name;        // as the user wrote it ("instructions", "msr/tsc/", "INST_RETIRED:ANY_P")
    uint32_t type = 0;       // perf_event_attr.type (PERF_TYPE_* or a PMU's dynamic type)
    uint64_t config = 0;     // perf_event_attr.config
    uint64_t config1 = 0;    // perf_event_attr.config1
    uint64_t config2 = 0;    // perf_event_attr.config2
    std::string unit = "1";  // "1" for counts; "s" for task_clock/cpu_clock after scaling ns->s
    double scale = 1.0;      // multiply the raw count by this (ns -> s for the clocks)
};

// Resolve one event name. Accepted forms:
//  - the 28 names of the original colmet (cpu_cycles ... bpf_output);
//  - "pmu/event/" or "pmu/event,key=value,.../" using the PMU's sysfs description
//    under <sysfs_root>/bus/event_source/devices/<pmu>/ (type, events/, format/);
//  - with libpfm4 (COLMET_HAVE_LIBPFM), any event name libpfm4 knows.
// Unknown names are Errc::invalid with a message that says which forms exist.
Result<PerfEventSpec> resolve_event(std::string_view name, const std::filesystem::path &sysfs_root = "/sys");

// Every name of a list (already split: spec/event_list.hpp), in order; the
// first unknown one is the error, and so is an empty list.
Result<std::vector<PerfEventSpec>> resolve_events(const std::vector<std::string> &names,
                                                  const std::filesystem::path &sysfs_root = "/sys");

// The original tool's 28 names, in its table order, with one line of meaning each.
struct NamedEvent {
    const char *name;
    const char *meaning;
};
const std::vector<NamedEvent> &legacy_event_names();

// True when this build resolves libpfm4 event names (COLMET_HAVE_LIBPFM).
bool have_libpfm();

}  // namespace colmet::perf
