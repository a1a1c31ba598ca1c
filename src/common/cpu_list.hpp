// The kernel's CPU list format ("0-3,8,10-11"), used by cpuset files and
// /sys/devices/system/cpu/online.
#pragma once

#include "common/result.hpp"

#include <string_view>
#include <vector>

namespace colmet {

// Parse a CPU list into sorted, unique CPU numbers. An empty list (an empty
// cpuset) is valid and gives no CPUs.
Result<std::vector<int>> parse_cpu_list(std::string_view text);

}  // namespace colmet
