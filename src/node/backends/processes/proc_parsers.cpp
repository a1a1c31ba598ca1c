#include "node/backends/processes/proc_parsers.hpp"

#include "common/text.hpp"
#include "node/backends/support/flat_keyed.hpp"
#include "node/backends/support/next_token.hpp"

#include <limits>
#include <optional>
#include <string>

namespace colmet::node::backends {

Result<ProcStat> parse_proc_stat(std::string_view text)
{
    size_t paren = text.rfind(')');
    if (paren == std::string_view::npos)
        return Error::parse("no ')' after comm");
    std::string_view rest = text.substr(paren + 1);
    // Field 3 (state) is token 0 after the ')'; field n is token n - 3.
    std::optional<uint64_t> ppid;
    std::optional<uint64_t> threads;
    std::optional<uint64_t> start;
    for (int field = 3; field <= 22; ++field) {
        std::string_view token = next_token(rest);
        if (token.empty())
            return Error::parse("only " + std::to_string(field - 1) + " fields");
        if (field == 4)
            ppid = text::parse_u64(token);
        else if (field == 20)
            threads = text::parse_u64(token);
        else if (field == 22)
            start = text::parse_u64(token);
    }
    if (!ppid || *ppid > static_cast<uint64_t>(std::numeric_limits<pid_t>::max()))
        return Error::parse("bad ppid (field 4)");
    if (!threads)
        return Error::parse("bad num_threads (field 20)");
    if (!start)
        return Error::parse("bad starttime (field 22)");
    return ProcStat{static_cast<pid_t>(*ppid), *threads, *start};
}

Result<ProcIo> parse_proc_io(std::string_view text)
{
    static constexpr std::array<std::string_view, k_proc_io_fields> k_keys = {
        "rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes"};
    std::array<std::optional<uint64_t>, k_proc_io_fields> v;
    if (auto r = parse_flat_keyed(text, k_keys, v); !r)
        return r.error();
    ProcIo io{};
    for (size_t i = 0; i < io.size(); ++i) {
        if (!v[i])
            return Error::parse("no " + std::string(k_keys[i]));
        io[i] = *v[i];
    }
    return io;
}

Result<void> parse_pid_list(std::string_view text, std::vector<pid_t> &pids)
{
    for (std::string_view line : text::Lines(text)) {
        line = text::trim(line);
        if (line.empty())
            continue;
        auto pid = text::parse_u64(line);
        if (!pid || *pid == 0 || *pid > static_cast<uint64_t>(std::numeric_limits<pid_t>::max()))
            return Error::parse("bad pid '" + std::string(line.substr(0, 32)) + "'");
        pids.push_back(static_cast<pid_t>(*pid));
    }
    return ok();
}

}  // namespace colmet::node::backends
