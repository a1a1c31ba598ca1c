// Character rules shared by the encoder's validate() and the decoder.
#pragma once

#include <cstddef>
#include <string_view>
#include <unordered_set>

namespace colmet::wire::rules {

// The index of the first item whose name (name_of(item)) equals an earlier
// one's, or items.size() when all differ. Linear (a hash set), so that a
// message of 1,024 metrics whose names change costs no quadratic work.
template <typename Items, typename NameOf>
size_t first_repeated_name(const Items &items, NameOf name_of)
{
    std::unordered_set<std::string_view> seen;
    seen.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i)
        if (!seen.insert(std::string_view(name_of(items[i]))).second)
            return i;
    return items.size();
}

// Bytes 0x20..0x7e only.
inline bool printable_ascii(std::string_view s)
{
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e)
            return false;
    }
    return true;
}

// Printable ASCII or any byte >= 0x80 (UTF-8 text); no control characters.
inline bool printable_text(std::string_view s)
{
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f)
            return false;
    }
    return true;
}

// 1..max bytes of [a-z0-9_]: backend names and meta keys.
inline bool snake_name(std::string_view s, size_t max)
{
    if (s.empty() || s.size() > max)
        return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    return true;
}

}  // namespace colmet::wire::rules
