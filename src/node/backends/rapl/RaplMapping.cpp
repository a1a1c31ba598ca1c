#include "node/backends/rapl/RaplMapping.hpp"

#include <algorithm>

namespace colmet::node::backends::rapl {

std::string rapl_mapping_csv(const std::vector<RaplDomain> &domains)
{
    std::string out;
    size_t column = 0;
    auto pair = [&](const std::string &package, const std::string &zone) {
        out += "counter_" + std::to_string(++column) + ",energy_microjoule," + package + ",zone_" + zone + "\n";
        out +=
            "counter_" + std::to_string(++column) + ",max_energy_range_microjoule," + package + ",zone_" + zone + "\n";
    };
    auto unsupported = [&] {
        for (int k = 0; k < 2; ++k)
            out += "counter_" + std::to_string(++column) + ",counter_not_supported_by_hardware,,\n";
    };

    // The packages in the order their domains come, each with the original's three zones.
    std::vector<std::string> packages;
    for (const auto &d : domains)
        if (!d.package.empty() && std::find(packages.begin(), packages.end(), d.package) == packages.end())
            packages.push_back(d.package);
    auto has = [&](const std::string &package, const std::string &zone) {
        return std::any_of(domains.begin(), domains.end(),
                           [&](const RaplDomain &d) { return d.package == package && d.domain == zone; });
    };
    for (const auto &package : packages) {
        for (const char *zone : {"package", "core", "dram"}) {
            if (has(package, zone))
                pair(package, zone);
            else
                unsupported();
        }
    }
    // Domains beyond the original's three zones.
    for (const auto &d : domains) {
        if (!d.package.empty() && (d.domain == "package" || d.domain == "core" || d.domain == "dram"))
            continue;
        pair(d.package.empty() ? d.domain : d.package, d.domain);
    }
    while (column < k_legacy_columns)
        out += "counter_" + std::to_string(++column) + ",no_counter,,\n";
    return out;
}

}  // namespace colmet::node::backends::rapl
