// Backend "lustre" (scope node): Lustre client statistics of every mount,
// from the llite stats files: <proc>/fs/lustre/llite/<fs>-<id>/stats, or
// <sysfs>/kernel/debug/lustre/llite/<fs>-<id>/stats where newer Lustre
// versions keep them (debugfs mounted, root).
//
// A stats line is "<name> <count> samples [<unit>] [<min> <max> <sum> [<sumsq>]]".
// Metrics per mount, named "<fs>.<what>" (<fs>: the directory name without
// its "-<superblock address>" suffix, the whole name if two mounts share it):
//   read_calls, write_calls    1, counter: count of read_bytes / write_bytes
//                                          (the original's lustre_nb_read/_write)
//   read_bytes, write_bytes    B, counter: the sum field of read_bytes / write_bytes
//                                          (lustre_bytes_read/_write)
//   open, close, ... (k_lustre_ops)  1, counter: operation counts
// and the original's four columns summed over mounts: read_calls,
// read_bytes, write_calls, write_bytes (no prefix). Lustre omits counters
// that are still 0, so an absent line is 0. Cumulative since mount.
#pragma once

#include "common/result.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::node::backends::lustre {

inline constexpr std::array<std::string_view, 20> k_lustre_ops = {
    "open", "close",  "mmap",    "seek",  "fsync", "readdir", "setattr", "truncate", "getattr",  "create",
    "link", "unlink", "symlink", "mkdir", "rmdir", "mknod",   "rename",  "statfs",   "getxattr", "setxattr"};

// One mount's values: read_calls, read_bytes, write_calls, write_bytes, then k_lustre_ops.
inline constexpr size_t k_per_mount = 4 + k_lustre_ops.size();
using MountValues = std::array<double, k_per_mount>;

// Parse a stats file (pure, no allocation). Absent counters are 0. A line
// of a listed counter that does not have the expected fields fails with
// Errc::parse naming it.
Result<void> parse_llite_stats(std::string_view text, MountValues &out);

struct Mount {
    std::string label;            // metric prefix
    std::filesystem::path stats;  // the stats file
};

// Mounts under both roots (the proc one first; a name seen twice is kept once).
std::vector<Mount> find_mounts(const std::filesystem::path &proc_root, const std::filesystem::path &sysfs_root);

class LustreBackend final : public MetricBackend {
public:
    explicit LustreBackend(std::vector<Mount> mounts);

    std::string_view name() const override { return "lustre"; }
    wire::Scope scope() const override { return wire::Scope::node; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override;

private:
    std::vector<Mount> m_mounts;
    std::vector<wire::MetricDescriptor> m_metrics;
    std::vector<KeptFile> m_files;
    StatusText m_problems;
};

// Fails with Errc::not_found when no Lustre file system is mounted.
Result<std::unique_ptr<MetricBackend>> make_lustre_backend(const NodeContext &ctx);

}  // namespace colmet::node::backends::lustre
