#include "node/backends/cgroup_memory/memory_parsers.hpp"

#include "node/backends/support/flat_keyed.hpp"

#include <array>

namespace colmet::node::backends {

Result<MemoryStat> parse_v1_memory_stat(std::string_view text)
{
    static constexpr std::array<std::string_view, 6> k_keys = {"total_rss", "total_cache", "total_pgmajfault",
                                                               "rss",       "cache",       "pgmajfault"};
    std::array<std::optional<uint64_t>, k_keys.size()> v;
    if (auto r = parse_flat_keyed(text, k_keys, v); !r)
        return r.error();
    return MemoryStat{v[0] ? v[0] : v[3], v[1] ? v[1] : v[4], v[2] ? v[2] : v[5]};
}

Result<MemoryStat> parse_v2_memory_stat(std::string_view text)
{
    static constexpr std::array<std::string_view, 3> k_keys = {"anon", "file", "pgmajfault"};
    std::array<std::optional<uint64_t>, k_keys.size()> v;
    if (auto r = parse_flat_keyed(text, k_keys, v); !r)
        return r.error();
    return MemoryStat{v[0], v[1], v[2]};
}

}  // namespace colmet::node::backends
