#include "common/text.hpp"

#include <charconv>

namespace colmet::text {

std::string_view trim(std::string_view s)
{
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && blank(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && blank(s.back()))
        s.remove_suffix(1);
    return s;
}

template <typename T>
static std::optional<T> parse_number(std::string_view s)
{
    s = trim(s);
    if (s.empty())
        return std::nullopt;
    T value{};
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || ptr != s.data() + s.size())
        return std::nullopt;
    return value;
}

std::optional<uint64_t> parse_u64(std::string_view s) { return parse_number<uint64_t>(s); }
std::optional<int64_t> parse_i64(std::string_view s) { return parse_number<int64_t>(s); }
std::optional<double> parse_double(std::string_view s) { return parse_number<double>(s); }

void Lines::iterator::advance()
{
    if (m_rest.empty()) {
        m_end = true;
        return;
    }
    auto nl = m_rest.find('\n');
    if (nl == std::string_view::npos) {
        m_line = m_rest;
        m_rest = {};
    } else {
        m_line = m_rest.substr(0, nl);
        m_rest.remove_prefix(nl + 1);
    }
}

bool split_key_value(std::string_view line, std::string_view &key, std::string_view &value)
{
    line = trim(line);
    auto sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos)
        return false;
    key = line.substr(0, sp);
    value = trim(line.substr(sp + 1));
    return true;
}

std::string printable(std::string_view text)
{
    constexpr size_t k_max = 80;
    std::string out;
    for (char c : text.substr(0, k_max))
        out += (c >= ' ' && c < 0x7f) ? c : '?';
    if (text.size() > k_max)
        out += "...";
    return out;
}

}  // namespace colmet::text
