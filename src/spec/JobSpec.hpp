// The per-job colmet request a user writes in the scheduler:
//   oarsub -t colmet=perfhw:instructions,cache_misses
//   srun --colmet=period=2,perfhw:task_clock
//
// Grammar: comma-separated items (';' also separates).
//   perfhw              count perf events (colmet-node's default list)
//   perfhw:EVENT        count perf events, starting a list; the items that
//                       follow and are not keywords are more events
//   period=S, period:S  sampling period in seconds (0.1 to 3600)
//   rapl, temperature, infiniband, lustre
//                       node-level backends
// An empty spec, or "true" (OAR's value for a plain -t colmet), asks for
// the site defaults.
#pragma once

#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::spec {

struct JobSpec {
    std::optional<double> period_s;
    bool perfhw = false;
    std::vector<std::string> events;         // empty with perfhw: colmet-node's default list
    std::vector<std::string> node_backends;  // rapl, temperature, infiniband, lustre

    bool operator==(const JobSpec &) const = default;
};

// Syntax and bounds only: whether an event exists depends on the node (see
// job/SpecEvents.hpp). Errors are sentences naming the offending item.
Result<JobSpec> parse_spec(std::string_view text);

// The colmet-node options that carry the spec (period excluded: the caller
// decides the effective period).
std::vector<std::string> spec_node_args(const JobSpec &spec);

// The spec written back in canonical form ("period=2,perfhw:a,b").
std::string format_spec(const JobSpec &spec);

}  // namespace colmet::spec
