// PMU events written "pmu/event/", "pmu/event,key=value/" or
// "pmu/key=value,key=value/", resolved through the PMU's description under
// <sysfs_root>/bus/event_source/devices/<pmu>/: the file `type`, the event
// aliases in events/ (with optional .scale and .unit files) and the bit
// fields in format/.
#pragma once

#include "common/result.hpp"
#include "perf/PerfEventSpec.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colmet::perf {

// Where a bit field of format/<key> lives: "config:0-7,32-35" is word 0,
// ranges {0,7} then {32,35}. The value's low bits go to the first range.
struct FormatField {
    unsigned word = 0;                                  // 0 config, 1 config1, 2 config2
    std::vector<std::pair<unsigned, unsigned>> ranges;  // inclusive [low, high] bit numbers
};

// The config, config1 and config2 words being built.
using ConfigWords = std::array<uint64_t, 3>;

// <sysfs_root>/bus/event_source/devices
std::filesystem::path pmu_devices_dir(const std::filesystem::path &sysfs_root);

// Parse the content of a format/<key> file ("config:0-7", "config1:0-63",
// "config:18", "config:0-7,32-35"). Errc::parse on anything else; config3
// and beyond are Errc::unsupported.
Result<FormatField> parse_format_field(std::string_view text);

// Number of bits of the field (sum of its ranges).
unsigned field_width(const FormatField &field);

// Write value into the field's bits (clearing them first). Errc::invalid when
// the value needs more bits than the field has; `what` names the field in
// the message ("format key 'event' of PMU 'cpu'").
Result<void> apply_format_field(const FormatField &field, uint64_t value, ConfigWords &words, const std::string &what);

// "0x3c", "0X3C" or "60". Errc::invalid when empty, not a number or above 2^64-1.
Result<uint64_t> parse_term_value(std::string_view text);

// A PMU, event or format key name that is one safe path component:
// [A-Za-z0-9_.-]+ and not only dots.
bool valid_sysfs_name(std::string_view name);

// Map a sysfs .unit text to colmet's unit ("Joules" -> "J"); "" -> "1".
std::string map_unit(std::string_view sysfs_unit);

// Resolve "pmu/.../". Every user mistake (unknown PMU, event or key, a value
// too wide, a name that is not one path component) is Errc::invalid with a
// message saying what exists; unreadable or malformed sysfs files are
// Errc::system or Errc::parse.
Result<PerfEventSpec> resolve_pmu_event(std::string_view name, const std::filesystem::path &sysfs_root);

}  // namespace colmet::perf
