// Pure parsers for the cgroup block I/O statistics, summed over devices.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <string_view>

namespace colmet::node::backends {

// cgroup v1 blkio.throttle.io_service_bytes[_recursive] (bytes) or
// blkio.throttle.io_serviced[_recursive] (operations): lines
// "8:0 Read 4096", "8:0 Write 0", "8:0 Sync 0", ..., "Total 0". Sums the
// Read and Write lines of every device; other lines are ignored.
struct BlkioTotals {
    uint64_t read = 0;
    uint64_t write = 0;
};
Result<BlkioTotals> parse_blkio_throttle(std::string_view text);

// cgroup v2 io.stat: "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0"
// per device (an empty file means no I/O yet). Unknown keys are ignored.
struct IoStat {
    uint64_t rbytes = 0;
    uint64_t wbytes = 0;
    uint64_t rios = 0;
    uint64_t wios = 0;
};
Result<IoStat> parse_io_stat(std::string_view text);

}  // namespace colmet::node::backends
