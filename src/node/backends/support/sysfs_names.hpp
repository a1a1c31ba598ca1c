// Helpers of the node-level backends (rapl, temperature, infiniband,
// lustre) that scan sysfs/procfs directories and name metrics after what
// they find there.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::node::backends {

// A metric name part from kernel text ("Package id 0" -> "package_id_0",
// "x86_pkg_temp" -> "x86_pkg_temp", "package-0" -> "package_0"): lower
// case, every run of other bytes than [a-z0-9] becomes one '_', no leading
// or trailing '_', at most 48 bytes; "unnamed" when nothing is left.
std::string metric_part(std::string_view text);

// The entries of `dir` whose name is `prefix` followed by a decimal number
// (thermal_zone3, hwmon0, temp2_input with suffix "_input"), sorted by that
// number; the number is returned with each name. Missing dir: empty.
struct NumberedEntry {
    std::string name;
    unsigned long number = 0;
};
std::vector<NumberedEntry> numbered_entries(const std::filesystem::path &dir, std::string_view prefix,
                                            std::string_view suffix = {});

// The sorted names of the subdirectories of `dir` (empty when it cannot be read).
std::vector<std::string> subdirectories(const std::filesystem::path &dir);

// A small sysfs text file, trimmed; nullopt when it cannot be read.
std::optional<std::string> read_trimmed(const std::filesystem::path &path);

}  // namespace colmet::node::backends
