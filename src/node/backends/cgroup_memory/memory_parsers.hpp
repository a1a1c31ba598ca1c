// Pure parsers for the cgroup memory.stat files. Values in bytes (anon,
// file) and events (major_faults); absent keys stay nullopt.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace colmet::node::backends {

struct MemoryStat {
    std::optional<uint64_t> anon;          // bytes of anonymous memory
    std::optional<uint64_t> file;          // bytes of page cache
    std::optional<uint64_t> major_faults;  // major page faults
};

// cgroup v1: the hierarchical total_rss, total_cache, total_pgmajfault, or
// rss, cache, pgmajfault when the total_* keys are absent.
Result<MemoryStat> parse_v1_memory_stat(std::string_view text);

// cgroup v2: anon, file, pgmajfault (already hierarchical).
Result<MemoryStat> parse_v2_memory_stat(std::string_view text);

}  // namespace colmet::node::backends
