#include "spec/JobSpec.hpp"

#include "common/period.hpp"
#include "spec/backend_catalog.hpp"
#include "spec/event_list.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace colmet::spec {
namespace {

constexpr size_t k_max_spec_length = 4096;

// The node-level backend a spec word switches on (backend_catalog.hpp), or nullptr.
const BackendInfo *node_backend_keyword(std::string_view word)
{
    const BackendInfo *b = backend_for_spec_keyword(word);
    return b && enabled_by_flag(b->kind) ? b : nullptr;
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

Result<double> parse_period(std::string_view value)
{
    std::string text(value);
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v))
        return Error::invalid("period '" + text + "' is not a number of seconds");
    if (v < k_min_period_s || v > k_max_period_s)
        return Error::invalid("period " + text + " is out of range (0.1 to 3600 seconds)");
    return v;
}

bool printable(std::string_view s)
{
    return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 127; });
}

}  // namespace

Result<JobSpec> parse_spec(std::string_view text)
{
    JobSpec spec;
    text = trim(text);
    if (text.empty() || text == "true")
        return spec;
    if (text.size() > k_max_spec_length)
        return Error::invalid("the colmet spec is longer than 4096 characters");

    bool in_event_list = false;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find_first_of(",;", pos);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view item = trim(text.substr(pos, end - pos));
        pos = end + 1;
        if (item.empty())
            continue;
        if (!printable(item))
            return Error::invalid("spec item '" + std::string(item) + "' contains spaces or control characters");

        // "key=value" or "key:value" for the keywords; anything else with a
        // colon (INST_RETIRED:ANY_P) is an event name.
        size_t sep = item.find_first_of("=:");
        std::string_view key = sep == std::string_view::npos ? item : item.substr(0, sep);
        std::string_view value = sep == std::string_view::npos ? std::string_view{} : item.substr(sep + 1);

        if (key == "period") {
            if (sep == std::string_view::npos)
                return Error::invalid("spec item 'period' needs a value, e.g. period=2");
            auto v = parse_period(value);
            if (!v)
                return v.error();
            spec.period_s = *v;
            in_event_list = false;
        } else if (key == "perfhw") {
            spec.perfhw = true;
            in_event_list = sep != std::string_view::npos;
            if (in_event_list) {
                if (value.empty())
                    return Error::invalid("spec item 'perfhw:' names no event (write perfhw for the default events)");
                spec.events.emplace_back(value);
            }
        } else if (node_backend_keyword(item)) {
            if (std::find(spec.node_backends.begin(), spec.node_backends.end(), item) == spec.node_backends.end())
                spec.node_backends.emplace_back(item);
            in_event_list = false;
        } else if (in_event_list) {
            spec.events.emplace_back(item);
        } else {
            return Error::invalid("unknown spec item '" + std::string(item) +
                                  "' (expected perfhw, perfhw:EVENT,..., period=SECONDS, " +
                                  node_spec_keywords(", ", " or ") + ")");
        }
    }
    for (size_t i = 0; i < spec.events.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (spec.events[i] == spec.events[j])
                return Error::invalid("event '" + spec.events[i] + "' is given twice");
    if (spec.events.size() > k_max_events)
        return Error::invalid("more than " + std::to_string(k_max_events) + " perf events requested");
    return spec;
}

std::vector<std::string> spec_node_args(const JobSpec &spec)
{
    std::vector<std::string> args;
    if (spec.perfhw) {
        args.emplace_back(backend_info("perfhw")->flag);
        if (!spec.events.empty()) {
            std::string list;
            for (const auto &e : spec.events)
                list += (list.empty() ? "" : ",") + e;
            args.emplace_back("--perfhw-list");
            args.push_back(std::move(list));
        }
    }
    for (const auto &b : spec.node_backends)
        if (const BackendInfo *nb = node_backend_keyword(b))
            args.emplace_back(nb->flag);
    return args;
}

std::string format_spec(const JobSpec &spec)
{
    std::string out;
    auto add = [&out](std::string_view item) {
        if (!out.empty())
            out += ',';
        out += item;
    };
    if (spec.period_s) {
        std::string p = std::to_string(*spec.period_s);
        p.erase(p.find_last_not_of('0') + 1);
        if (!p.empty() && p.back() == '.')
            p.pop_back();
        add("period=" + p);
    }
    if (spec.perfhw) {
        if (spec.events.empty())
            add("perfhw");
        for (size_t i = 0; i < spec.events.size(); ++i)
            add(i == 0 ? "perfhw:" + spec.events[i] : spec.events[i]);
    }
    for (const auto &b : spec.node_backends)
        add(b);
    return out;
}

}  // namespace colmet::spec
