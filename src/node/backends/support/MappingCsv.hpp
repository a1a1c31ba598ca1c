// Side files of the original colmet that map its counter_N columns to what
// they hold (perfhw, RAPL, temperature): written once at start into a
// directory the admin chose, named <prefix>.<seconds>.<microseconds>.csv like
// the original's time.time() naming, never overwriting an existing file.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace colmet::node::backends {

// "<prefix>.<seconds>.<microseconds>.csv" for a CLOCK_REALTIME time in ns.
std::string mapping_file_name(std::string_view prefix, int64_t now_ns);

// Create <dir>/<mapping_file_name(prefix, now_ns)> (O_EXCL, mode 0644) with
// `content`; returns its path.
Result<std::filesystem::path> write_mapping_file(const std::filesystem::path &dir, std::string_view prefix,
                                                 int64_t now_ns, std::string_view content);

// The same, for start-up: nothing when `dir` is empty; logs "<prefix>
// written to <path>" (info), or a warning saying why it was not.
void write_mapping_logged(const std::string &dir, std::string_view prefix, int64_t now_ns, std::string_view content);

}  // namespace colmet::node::backends
