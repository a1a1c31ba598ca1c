// Parsing the "flat keyed" kernel format shared by cpu.stat, cpuacct.stat,
// memory.stat and /proc/<pid>/io: one "key value" (or "key: value") per line.
// Pure: no I/O, no allocation unless the input is malformed.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace colmet::node::backends {

// For each line whose key equals keys[i], set values[i] to its value (the
// last one wins if a key repeats). Keys not listed are ignored, so new kernel
// keys do not break parsing; listed keys that do not appear keep their value
// (callers start from nullopt). A listed key whose value is not an unsigned
// decimal integer fails with Errc::parse naming the key.
// Precondition: keys.size() == values.size().
Result<void> parse_flat_keyed(std::string_view text, std::span<const std::string_view> keys,
                              std::span<std::optional<uint64_t>> values);

}  // namespace colmet::node::backends
