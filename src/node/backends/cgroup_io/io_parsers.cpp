#include "node/backends/cgroup_io/io_parsers.hpp"

#include "common/text.hpp"
#include "node/backends/support/next_token.hpp"

#include <string>

namespace colmet::node::backends {
namespace {

Error bad_line(std::string_view line) { return Error::parse("bad line '" + std::string(line.substr(0, 64)) + "'"); }

}  // namespace

Result<BlkioTotals> parse_blkio_throttle(std::string_view text)
{
    BlkioTotals totals;
    for (std::string_view line : text::Lines(text)) {
        std::string_view rest = line;
        std::string_view device = next_token(rest);
        std::string_view op = next_token(rest);
        if (device.empty() || device == "Total" || (op != "Read" && op != "Write"))
            continue;
        auto value = text::parse_u64(rest);
        if (!value)
            return bad_line(line);
        (op == "Read" ? totals.read : totals.write) += *value;
    }
    return totals;
}

Result<IoStat> parse_io_stat(std::string_view text)
{
    IoStat totals;
    for (std::string_view line : text::Lines(text)) {
        std::string_view rest = line;
        if (next_token(rest).empty())  // the device ("8:0"), or a blank line
            continue;
        for (std::string_view item = next_token(rest); !item.empty(); item = next_token(rest)) {
            size_t eq = item.find('=');
            if (eq == std::string_view::npos)
                return bad_line(line);
            std::string_view key = item.substr(0, eq);
            uint64_t *sum = key == "rbytes"   ? &totals.rbytes
                            : key == "wbytes" ? &totals.wbytes
                            : key == "rios"   ? &totals.rios
                            : key == "wios"   ? &totals.wios
                                              : nullptr;
            if (sum == nullptr)
                continue;
            auto value = text::parse_u64(item.substr(eq + 1));
            if (!value)
                return bad_line(line);
            *sum += *value;
        }
    }
    return totals;
}

}  // namespace colmet::node::backends
