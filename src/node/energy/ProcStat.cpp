#include "node/energy/ProcStat.hpp"

#include "node/backends/support/next_token.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdint>

namespace colmet::node::energy {

bool parse_proc_stat(std::string_view text, double ticks_per_s, CpuTimes &out) noexcept
{
    bool found = false;
    out = {};
    while (!text.empty()) {
        const size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        std::string_view label = backends::next_token(line);
        if (!label.starts_with("cpu"))
            continue;
        if (label.size() > 3) {
            out.cpus += 1;
            continue;
        }
        // user nice system idle iowait irq softirq steal: all but idle and iowait.
        uint64_t busy = 0;
        for (int field = 0; field < 8; ++field) {
            std::string_view token = backends::next_token(line);
            uint64_t v = 0;
            if (token.empty() || std::from_chars(token.data(), token.data() + token.size(), v).ec != std::errc())
                return false;
            if (field != 3 && field != 4)
                busy += v;
        }
        out.busy_s = static_cast<double>(busy) / ticks_per_s;
        found = true;
    }
    return found && out.cpus > 0;
}

ProcStat::ProcStat(const std::filesystem::path &proc_root)
    : m_file(proc_root, "stat"), m_ticks_per_s(static_cast<double>(sysconf(_SC_CLK_TCK)))
{
    if (m_ticks_per_s <= 0)
        m_ticks_per_s = 100;
}

bool ProcStat::read(CpuTimes &out, backends::StatusText &status) noexcept
{
    std::string_view text;
    if (!m_file.read(text, status))
        return false;
    if (!parse_proc_stat(text, m_ticks_per_s, out)) {
        status.item("stat: no cpu line");
        return false;
    }
    return true;
}

}  // namespace colmet::node::energy
