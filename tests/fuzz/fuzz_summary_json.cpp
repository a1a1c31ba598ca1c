// libFuzzer target for the summary's JSON reader (collector/summary:
// parse_summary_json), what `colmet-job summary` and `colmet-job run` read
// from a job's <stem>.json, a file any path may name. Any text must be
// refused with an error or give a summary that the project's own writer
// (summary_json) writes back to a text that reads as the same summary.
#include "collector/summary/JobSummary.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace colmet::collector;

namespace {

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

bool same(const JobSummary &a, const JobSummary &b)
{
    for (const auto &f : k_summary_f64)
        if (!same_number(a.*f.field, b.*f.field))
            return false;
    for (const auto &f : k_summary_u64)
        if (a.*f.field != b.*f.field)
            return false;
    for (const auto &f : k_summary_i64)
        if (a.*f.field != b.*f.field)
            return false;
    return a.job_id == b.job_id && a.flags == b.flags && a.cgroup_warning == b.cgroup_warning;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto summary = parse_summary_json(text);
    if (!summary) {
        if (summary.error().message().empty())
            std::abort();  // a refusal says why
        return 0;
    }
    auto again = parse_summary_json(summary_json(*summary, "fuzz"));
    if (!again || !same(*summary, *again))
        std::abort();
    return 0;
}
