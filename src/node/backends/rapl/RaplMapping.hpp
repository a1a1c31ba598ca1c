// RAPL_mapping.<time>.csv: the original colmet's column map of its RAPL
// record (legacy-colmet.md §6.2), for tools built around that CSV.
//
// The original record holds, for zone index i (package-major, zones
// package, core, dram of each package), counter_{2i+1} = energy in µJ and
// counter_{2i+2} = the max energy range in µJ, 24 columns at least:
//   counter_<n>,energy_microjoule,<pkg-name>,zone_<zone>
//   counter_<n>,max_energy_range_microjoule,<pkg-name>,zone_<zone>
//   counter_<n>,counter_not_supported_by_hardware,,   (a zone this package lacks: its values were 0)
//   counter_<n>,no_counter,,                          (an unused column: its values were -1)
// Domains the original did not know (uncore, psys) follow the packages'
// zones in the same two-column form. colmet's metric for
// "<pkg-name>,zone_<zone>" is "<pkg-name with '-' as '_'>_<zone>"
// (package-0,zone_core -> package_0_core); psys is "psys,zone_psys" -> psys.
#pragma once

#include "node/backends/rapl/RaplDomains.hpp"

#include <string>
#include <vector>

namespace colmet::node::backends::rapl {

inline constexpr size_t k_legacy_columns = 24;

std::string rapl_mapping_csv(const std::vector<RaplDomain> &domains);

}  // namespace colmet::node::backends::rapl
