// Pure parsers for the cgroup CPU accounting files. Values are returned as
// the kernel writes them (ticks, ns, us); the backend converts to seconds.
// A key that is absent stays nullopt; unknown keys are ignored.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace colmet::node::backends {

// cgroup v1 cpuacct.stat: "user N\nsystem N" in USER_HZ ticks.
struct CpuacctStat {
    std::optional<uint64_t> user_ticks;
    std::optional<uint64_t> system_ticks;
};
Result<CpuacctStat> parse_cpuacct_stat(std::string_view text);

// cgroup v1 cpu.stat (cpu controller): CFS bandwidth throttling.
struct V1CpuStat {
    std::optional<uint64_t> nr_periods;
    std::optional<uint64_t> nr_throttled;
    std::optional<uint64_t> throttled_time_ns;
};
Result<V1CpuStat> parse_v1_cpu_stat(std::string_view text);

// cgroup v2 cpu.stat. The throttling keys appear only when the cpu
// controller is enabled for the cgroup.
struct V2CpuStat {
    std::optional<uint64_t> usage_usec;
    std::optional<uint64_t> user_usec;
    std::optional<uint64_t> system_usec;
    std::optional<uint64_t> nr_periods;
    std::optional<uint64_t> nr_throttled;
    std::optional<uint64_t> throttled_usec;
};
Result<V2CpuStat> parse_v2_cpu_stat(std::string_view text);

}  // namespace colmet::node::backends
