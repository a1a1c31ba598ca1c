#include "collector/sinks/tsdb/Naming.hpp"

#include <cctype>
#include <string_view>

namespace colmet::collector::tsdb {
namespace {

constexpr std::string_view k_scaling_suffix = ".scaling";  // perfhw's multiplexing ratio of an event

std::string sanitise(std::string_view text)
{
    std::string out(text);
    for (char &c : out) {
        const auto u = static_cast<unsigned char>(c);
        c = std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
    }
    return out;
}

bool ends_with(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string unit_word(const std::string &unit)
{
    if (unit == "s")
        return "seconds";
    if (unit == "B")
        return "bytes";
    if (unit == "J")
        return "joules";
    if (unit == "W")
        return "watts";
    if (unit == "degC")
        return "celsius";
    if (unit == "1" || unit.empty())
        return "";
    return sanitise(unit);
}

SeriesName series_name(const std::string &backend, const wire::MetricDescriptor &metric)
{
    SeriesName n;
    n.measurement = "colmet_" + sanitise(backend);
    const std::string unit = unit_word(metric.unit);
    const bool counter = metric.kind == wire::MetricKind::counter;
    if (backend == "perfhw") {
        if (ends_with(metric.name, k_scaling_suffix)) {
            n.event = metric.name.substr(0, metric.name.size() - k_scaling_suffix.size());
            n.field = "scaling_ratio";
        } else {
            n.event = metric.name;
            n.field = unit.empty() ? "count" : unit;
            if (counter)
                n.field += "_total";
        }
        return n;
    }
    std::string_view name = metric.name;
    // gpu<i>_<metric>: colmet_gpu_<metric>{gpu="<i>"}.
    if (backend == "gpu" && name.starts_with("gpu")) {
        const size_t sep = name.find('_');
        const std::string_view index = name.substr(3, sep == std::string_view::npos ? 0 : sep - 3);
        if (!index.empty() && index.find_first_not_of("0123456789") == std::string_view::npos) {
            n.event = std::string(index);
            n.event_label = "gpu";
            name.remove_prefix(sep + 1);
        }
    }
    n.field = sanitise(name);
    if (!unit.empty() && !ends_with(n.field, "_" + unit))
        n.field += "_" + unit;
    if (counter && !ends_with(n.field, "_total"))
        n.field += "_total";
    return n;
}

}  // namespace colmet::collector::tsdb
