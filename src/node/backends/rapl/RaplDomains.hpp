// Finding the RAPL energy domains of a node, from one of two sources:
//  - powercap (preferred): <sysfs>/class/powercap/intel-rapl:<P> (a package
//    zone, name "package-<P>", or "psys") and intel-rapl:<P>:<D> (its
//    sub-zones "core", "uncore", "dram"); amd-rapl:* zones the same way. AMD
//    machines (Linux >= 5.8) show "package-<P>" and "core" under the
//    intel-rapl names. intel-rapl-mmio:* zones repeat the package domain
//    through another interface and are skipped.
//  - the perf power PMU: <sysfs>/bus/event_source/devices/power with
//    events/energy-{pkg,cores,gpu,ram,psys} (+ .scale, .unit) counted on the
//    CPUs of its cpumask (one per package).
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace colmet::node::backends::rapl {

enum class Source { powercap, perf };

struct RaplDomain {
    std::string metric;   // "package_0_package", "package_1_dram", "psys"
    std::string package;  // the package zone's name ("package-0"); empty for psys
    std::string domain;   // "package", "core", "uncore", "dram", "psys" (or the zone's own name)
    // powercap
    std::filesystem::path dir;  // the zone's directory
    uint64_t max_range_uj = 0;  // max_energy_range_uj (0: unreadable)
    // perf power PMU
    uint32_t type = 0;
    uint64_t config = 0;
    int cpu = -1;
    double scale = 0;  // joules per count
};

// <sysfs_root>/class/powercap
std::filesystem::path powercap_dir(const std::filesystem::path &sysfs_root);
// <sysfs_root>/bus/event_source/devices/power
std::filesystem::path power_pmu_dir(const std::filesystem::path &sysfs_root);

// Domains in a fixed order: packages by number, each with package, core,
// uncore, dram, other sub-zones; then psys and other top-level zones.
// Errc::not_found when the tree has no RAPL zone.
Result<std::vector<RaplDomain>> find_powercap_domains(const std::filesystem::path &sysfs_root);

// The power PMU's energy events, one domain per event and package.
// Errc::not_found when the PMU is absent; Errc::parse on malformed files.
Result<std::vector<RaplDomain>> find_perf_power_domains(const std::filesystem::path &sysfs_root);

}  // namespace colmet::node::backends::rapl
