#include "common/names.hpp"

namespace colmet {

static bool safe_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

std::string sanitize_name(std::string_view id)
{
    std::string out;
    out.reserve(id.size() < k_max_id_length ? id.size() : k_max_id_length);
    for (char c : id.substr(0, k_max_id_length))
        out.push_back(safe_char(c) ? c : '_');
    if (out.empty())
        return "_";
    if (out.front() == '.')
        out.front() = '_';
    return out;
}

bool valid_identifier(std::string_view id)
{
    if (id.empty() || id.size() > k_max_id_length)
        return false;
    for (char c : id) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e || c == '/')
            return false;
    }
    return true;
}

} // namespace colmet
