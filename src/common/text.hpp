// Pure parsing helpers for kernel text formats. No I/O; no allocation but in
// join and printable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::text {

// Parse an unsigned decimal integer that fills the whole view (surrounding
// blanks and a trailing newline allowed). "max" (cgroup v2) is not a number.
std::optional<uint64_t> parse_u64(std::string_view s);
std::optional<int64_t> parse_i64(std::string_view s);
std::optional<double> parse_double(std::string_view s);

std::string_view trim(std::string_view s);

// Iterate over the lines of a buffer: for (auto line : Lines(buf)) ...
class Lines {
public:
    explicit Lines(std::string_view buf) : m_buf(buf) {}
    class iterator {
    public:
        iterator(std::string_view rest, bool end) : m_rest(rest), m_end(end) { advance(); }
        std::string_view operator*() const { return m_line; }
        iterator &operator++()
        {
            advance();
            return *this;
        }
        bool operator!=(const iterator &o) const { return m_end != o.m_end; }

    private:
        void advance();
        std::string_view m_rest;
        std::string_view m_line;
        bool m_end;
    };
    iterator begin() const { return {m_buf, false}; }
    iterator end() const { return {{}, true}; }

private:
    std::string_view m_buf;
};

// The parts with `sep` between them.
inline std::string join(const std::vector<std::string> &parts, std::string_view sep)
{
    std::string out;
    for (const auto &p : parts) {
        if (!out.empty())
            out += sep;
        out += p;
    }
    return out;
}

// Split "key value" (one or more blanks) at the first blank run.
// Returns false when the line has no blank.
bool split_key_value(std::string_view line, std::string_view &key, std::string_view &value);

// Untrusted text made safe for a message: bytes outside printable ASCII
// become '?' and it is cut to 80 bytes ("..." says so).
std::string printable(std::string_view text);

}  // namespace colmet::text
