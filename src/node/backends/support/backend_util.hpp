// Helpers shared by the backend factories and sample() implementations.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/result.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>

namespace colmet::node::backends {

// The job's directory for a controller (the unified directory on v2), checked
// to exist. Fails with Errc::unsupported "<backend>: <controller> controller
// not mounted" or Errc::not_found "<backend>: <dir>: No such file or directory".
Result<std::filesystem::path> controller_dir(const cgroup::CgroupPaths &paths, std::string_view controller,
                                             std::string_view backend);

// Fail the factory with "<backend>: open <path>: <reason>" when `file` did not open.
Result<void> require_open(const KeptFile &file, std::string_view backend);

// Read a file holding one unsigned integer (cpuacct.usage, memory.current).
// On failure note "<name>: <reason>" in `status` and return nullopt.
std::optional<uint64_t> read_u64(KeptFile &file, StatusText &status) noexcept;

// values[index] = raw * scale, or NaN with "<file>: no <key>" in `status`.
void store(std::span<double> values, size_t index, std::optional<uint64_t> raw, double scale, StatusText &status,
           std::string_view file, std::string_view key) noexcept;

}  // namespace colmet::node::backends
