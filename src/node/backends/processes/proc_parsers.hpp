// Pure parsers for /proc/<pid>/stat, /proc/<pid>/io and cgroup.procs.
#pragma once

#include "common/result.hpp"

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace colmet::node::backends {

// The fields of /proc/<pid>/stat the processes backend uses. They are
// counted after the LAST ')' because comm (field 2) may hold blanks and
// parentheses: "42 (a b) (c)) S 1 ...".
struct ProcStat {
    pid_t ppid = 0;            // field 4
    uint64_t num_threads = 0;  // field 20
    uint64_t starttime = 0;    // field 22, clock ticks after boot: tells a reused pid apart
};
Result<ProcStat> parse_proc_stat(std::string_view text);

// /proc/<pid>/io, in the kernel's order.
enum ProcIoField : size_t {
    k_rchar,
    k_wchar,
    k_syscr,
    k_syscw,
    k_read_bytes,
    k_write_bytes,
    k_cancelled_write_bytes,
    k_proc_io_fields,
};
using ProcIo = std::array<uint64_t, k_proc_io_fields>;

// "rchar: 1\nwchar: 2\n..."; every one of the seven keys must be present.
Result<ProcIo> parse_proc_io(std::string_view text);

// Append the pids of a cgroup.procs file (one per line) to `pids`.
// Allocates only when `pids` must grow.
Result<void> parse_pid_list(std::string_view text, std::vector<pid_t> &pids);

}  // namespace colmet::node::backends
