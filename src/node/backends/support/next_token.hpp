// Blank-separated tokens of a line, without allocation.
#pragma once

#include <string_view>

namespace colmet::node::backends {

// Remove and return the next token of `rest` (empty when none is left).
inline std::string_view next_token(std::string_view &rest)
{
    size_t start = rest.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos) {
        rest = {};
        return {};
    }
    rest.remove_prefix(start);
    size_t end = rest.find_first_of(" \t\r\n");
    std::string_view token = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    return token;
}

}  // namespace colmet::node::backends
