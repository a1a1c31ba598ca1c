#include "spec/event_list.hpp"

#include "common/text.hpp"

#include <algorithm>

namespace colmet::spec {
namespace {

bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

Result<std::vector<std::string>> split_event_list(const std::vector<std::string> &args)
{
    std::vector<std::string> names;
    for (const std::string &arg : args) {
        size_t i = 0;
        while (i < arg.size()) {
            if (is_separator(arg[i])) {
                ++i;
                continue;
            }
            // A name ends at a separator, except that commas between the two
            // slashes of "pmu/event,key=value/" belong to the name.
            size_t start = i;
            bool in_pmu_terms = false;
            for (; i < arg.size(); ++i) {
                char c = arg[i];
                if (c == '/')
                    in_pmu_terms = !in_pmu_terms;
                else if (is_separator(c) && !(c == ',' && in_pmu_terms))
                    break;
            }
            std::string name = arg.substr(start, i - start);
            if (in_pmu_terms)
                return Error::invalid("perf event '" + text::printable(name) +
                                      "' has no closing '/' (write pmu/event/)");
            if (std::find(names.begin(), names.end(), name) != names.end())
                return Error::invalid("event '" + text::printable(name) + "' listed twice");
            if (names.size() == k_max_events)
                return Error::invalid("too many perf events: at most " + std::to_string(k_max_events));
            names.push_back(std::move(name));
        }
    }
    return names;
}

}  // namespace colmet::spec
