// The node's busy CPU time and CPU count from /proc/stat, read at every
// sample without allocating: busy = user + nice + system + irq + softirq +
// steal of the "cpu" line (guest time is inside user), in seconds; CPUs =
// the "cpuN" lines (the online CPUs).
#pragma once

#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <filesystem>
#include <string_view>

namespace colmet::node::energy {

struct CpuTimes {
    double busy_s = 0;
    double cpus = 0;
};

// Parse the text of /proc/stat; false when it has no "cpu" line.
bool parse_proc_stat(std::string_view text, double ticks_per_s, CpuTimes &out) noexcept;

class ProcStat {
public:
    explicit ProcStat(const std::filesystem::path &proc_root);
    // False (with the reason added to `status`) when it could not be read.
    bool read(CpuTimes &out, backends::StatusText &status) noexcept;

private:
    backends::KeptFile m_file;
    double m_ticks_per_s;
};

}  // namespace colmet::node::energy
