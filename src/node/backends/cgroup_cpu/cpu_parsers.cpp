#include "node/backends/cgroup_cpu/cpu_parsers.hpp"

#include "node/backends/support/flat_keyed.hpp"

#include <array>

namespace colmet::node::backends {

Result<CpuacctStat> parse_cpuacct_stat(std::string_view text)
{
    static constexpr std::array<std::string_view, 2> k_keys = {"user", "system"};
    std::array<std::optional<uint64_t>, k_keys.size()> v;
    if (auto r = parse_flat_keyed(text, k_keys, v); !r)
        return r.error();
    return CpuacctStat{v[0], v[1]};
}

Result<V1CpuStat> parse_v1_cpu_stat(std::string_view text)
{
    static constexpr std::array<std::string_view, 3> k_keys = {"nr_periods", "nr_throttled", "throttled_time"};
    std::array<std::optional<uint64_t>, k_keys.size()> v;
    if (auto r = parse_flat_keyed(text, k_keys, v); !r)
        return r.error();
    return V1CpuStat{v[0], v[1], v[2]};
}

Result<V2CpuStat> parse_v2_cpu_stat(std::string_view text)
{
    static constexpr std::array<std::string_view, 6> k_keys = {"usage_usec", "user_usec",    "system_usec",
                                                               "nr_periods", "nr_throttled", "throttled_usec"};
    std::array<std::optional<uint64_t>, k_keys.size()> v;
    if (auto r = parse_flat_keyed(text, k_keys, v); !r)
        return r.error();
    return V2CpuStat{v[0], v[1], v[2], v[3], v[4], v[5]};
}

}  // namespace colmet::node::backends
