#include "node/backends/rapl/RaplDomains.hpp"

#include "common/cpu_list.hpp"
#include "common/text.hpp"
#include "node/backends/support/sysfs_names.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>

namespace colmet::node::backends::rapl {
namespace {

// Domain order within a package.
int domain_rank(std::string_view domain)
{
    static constexpr std::array<std::string_view, 5> k_order = {"package", "core", "uncore", "dram", "psys"};
    auto it = std::find(k_order.begin(), k_order.end(), domain);
    return static_cast<int>(it - k_order.begin());
}

// "intel-rapl:1:2" -> {1, 2}; "intel-rapl:1" -> {1, -1}; others: false.
bool parse_zone_name(std::string_view name, long &zone, long &sub)
{
    std::string_view rest;
    for (std::string_view type : {"intel-rapl:", "amd-rapl:"})
        if (name.starts_with(type))
            rest = name.substr(type.size());
    if (rest.empty())
        return false;
    auto number = [](std::string_view text, long &out) {
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
        return !text.empty() && ec == std::errc() && p == text.data() + text.size() && out >= 0;
    };
    auto colon = rest.find(':');
    sub = -1;
    if (colon == std::string_view::npos)
        return number(rest, zone);
    return number(rest.substr(0, colon), zone) && number(rest.substr(colon + 1), sub);
}

void make_unique_names(std::vector<RaplDomain> &domains)
{
    std::set<std::string> seen;
    for (auto &d : domains) {
        std::string name = d.metric;
        for (int k = 1; seen.count(name) != 0; ++k)
            name = d.metric + "_" + std::to_string(k);
        d.metric = name;
        seen.insert(name);
    }
}

struct Zone {
    long zone = 0;
    long sub = -1;
    std::string dir_name;
    std::string name;    // the zone's "name" file
    std::string prefix;  // "intel-rapl" / "amd-rapl" (zones of two types stay apart)
};

}  // namespace

std::filesystem::path powercap_dir(const std::filesystem::path &sysfs_root) { return sysfs_root / "class/powercap"; }

std::filesystem::path power_pmu_dir(const std::filesystem::path &sysfs_root)
{
    return sysfs_root / "bus/event_source/devices/power";
}

Result<std::vector<RaplDomain>> find_powercap_domains(const std::filesystem::path &sysfs_root)
{
    const auto root = powercap_dir(sysfs_root);
    std::vector<Zone> zones;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        Zone z;
        z.dir_name = it->path().filename().string();
        if (!parse_zone_name(z.dir_name, z.zone, z.sub))
            continue;
        z.prefix = z.dir_name.substr(0, z.dir_name.find(':'));
        auto name = read_trimmed(it->path() / "name");
        z.name = name ? *name : z.dir_name;
        zones.push_back(std::move(z));
    }
    if (zones.empty())
        return Error(Errc::not_found, "no RAPL zone (intel-rapl:*) in " + root.string());
    std::sort(zones.begin(), zones.end(), [](const Zone &a, const Zone &b) {
        return std::tie(a.prefix, a.zone, a.sub) < std::tie(b.prefix, b.zone, b.sub);
    });

    std::vector<RaplDomain> packages, others;
    for (const auto &top : zones) {
        if (top.sub >= 0)
            continue;
        const bool is_package = top.name.starts_with("package");
        std::vector<RaplDomain> group;
        RaplDomain d;
        d.dir = root / top.dir_name;
        if (is_package) {
            d.package = top.name;
            d.domain = "package";
            d.metric = metric_part(top.name) + "_package";
        } else {
            d.domain = metric_part(top.name);
            d.metric = d.domain;
        }
        group.push_back(d);
        for (const auto &sub : zones) {
            if (sub.sub < 0 || sub.zone != top.zone || sub.prefix != top.prefix)
                continue;
            RaplDomain s;
            s.dir = root / sub.dir_name;
            s.package = is_package ? top.name : std::string();
            s.domain = metric_part(sub.name);
            s.metric = metric_part(top.name) + "_" + s.domain;
            group.push_back(std::move(s));
        }
        // Sub-zones by domain, then by zone number (the order they were added in).
        std::vector<std::pair<int, size_t>> order;
        for (size_t k = 1; k < group.size(); ++k)
            order.emplace_back(domain_rank(group[k].domain), k);
        std::sort(order.begin(), order.end());
        std::vector<RaplDomain> sorted = {group.front()};
        for (const auto &[rank, k] : order)
            sorted.push_back(std::move(group[k]));
        group = std::move(sorted);
        auto &target = is_package ? packages : others;
        target.insert(target.end(), group.begin(), group.end());
    }
    packages.insert(packages.end(), others.begin(), others.end());
    for (auto &d : packages) {
        auto range = read_trimmed(d.dir / "max_energy_range_uj");
        if (auto v = range ? text::parse_u64(*range) : std::nullopt)
            d.max_range_uj = *v;
    }
    make_unique_names(packages);
    return packages;
}

Result<std::vector<RaplDomain>> find_perf_power_domains(const std::filesystem::path &sysfs_root)
{
    const auto pmu = power_pmu_dir(sysfs_root);
    auto type_text = read_trimmed(pmu / "type");
    if (!type_text)
        return Error(Errc::not_found, "no perf power PMU (" + pmu.string() + ")");
    auto type = text::parse_u64(*type_text);
    if (!type || *type > UINT32_MAX)
        return Error::parse((pmu / "type").string() + ": not a PMU type");
    auto mask_text = read_trimmed(pmu / "cpumask");
    std::vector<int> cpus = {0};
    if (mask_text) {
        auto parsed = parse_cpu_list(*mask_text);
        if (!parsed || parsed->empty())
            return Error::parse((pmu / "cpumask").string() + ": not a CPU list");
        cpus = *parsed;
    }
    // Package number of each CPU of the mask (its position when unknown).
    std::vector<std::string> package_of;
    for (size_t i = 0; i < cpus.size(); ++i) {
        auto id = read_trimmed(sysfs_root / "devices/system/cpu" / ("cpu" + std::to_string(cpus[i])) /
                               "topology/physical_package_id");
        auto n = id ? text::parse_u64(*id) : std::nullopt;
        package_of.push_back(std::to_string(n ? *n : i));
    }

    static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> k_events = {{
        {"energy-pkg", "package"},
        {"energy-cores", "core"},
        {"energy-gpu", "uncore"},
        {"energy-ram", "dram"},
        {"energy-psys", "psys"},
    }};
    std::vector<RaplDomain> domains;
    for (size_t c = 0; c < cpus.size(); ++c) {
        for (auto [event, domain] : k_events) {
            if (domain == "psys" && c > 0)
                continue;  // the platform's counter: the same on every package's CPU
            auto config_text = read_trimmed(pmu / "events" / event);
            if (!config_text)
                continue;  // this machine lacks the domain
            // "event=0x02" (possibly with more terms: only event= is used by this PMU).
            std::string_view cfg = *config_text;
            if (!cfg.starts_with("event="))
                return Error::parse((pmu / "events" / event).string() + ": expected event=<number>");
            cfg.remove_prefix(6);
            cfg = cfg.substr(0, cfg.find(','));
            uint64_t config = 0;
            int base = cfg.starts_with("0x") ? 16 : 10;
            if (base == 16)
                cfg.remove_prefix(2);
            auto [p, ec] = std::from_chars(cfg.data(), cfg.data() + cfg.size(), config, base);
            if (cfg.empty() || ec != std::errc() || p != cfg.data() + cfg.size())
                return Error::parse((pmu / "events" / event).string() + ": bad event number");
            auto scale_text = read_trimmed(pmu / "events" / (std::string(event) + ".scale"));
            auto scale = scale_text ? text::parse_double(*scale_text) : std::nullopt;
            if (!scale || !(*scale > 0))
                return Error::parse((pmu / "events" / (std::string(event) + ".scale")).string() +
                                    ": missing or not a positive number");
            auto unit = read_trimmed(pmu / "events" / (std::string(event) + ".unit"));
            if (unit && *unit != "Joules")
                return Error::parse((pmu / "events" / (std::string(event) + ".unit")).string() + ": unit '" + *unit +
                                    "', expected Joules");
            RaplDomain d;
            d.package = "package-" + package_of[c];
            d.domain = std::string(domain);
            d.metric = domain == "psys" ? std::string("psys") : "package_" + package_of[c] + "_" + d.domain;
            if (domain == "psys")
                d.package.clear();
            d.type = static_cast<uint32_t>(*type);
            d.config = config;
            d.cpu = cpus[c];
            d.scale = *scale;
            domains.push_back(std::move(d));
        }
    }
    if (domains.empty())
        return Error(Errc::not_found, "the perf power PMU has no energy event (" + (pmu / "events").string() + ")");
    // psys after the packages, like powercap.
    std::vector<RaplDomain> ordered;
    for (bool psys : {false, true})
        for (const auto &d : domains)
            if (d.package.empty() == psys)
                ordered.push_back(d);
    domains = std::move(ordered);
    make_unique_names(domains);
    return domains;
}

}  // namespace colmet::node::backends::rapl
