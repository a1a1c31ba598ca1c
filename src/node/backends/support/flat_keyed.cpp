#include "node/backends/support/flat_keyed.hpp"

#include "common/text.hpp"

#include <string>

namespace colmet::node::backends {
namespace {

std::string_view strip_colon(std::string_view key)
{
    if (!key.empty() && key.back() == ':')
        key.remove_suffix(1);
    return key;
}

Error bad_value(std::string_view key, std::string_view value)
{
    return Error::parse("bad value for " + std::string(key) + ": '" + std::string(value.substr(0, 32)) + "'");
}

}  // namespace

Result<void> parse_flat_keyed(std::string_view text, std::span<const std::string_view> keys,
                              std::span<std::optional<uint64_t>> values)
{
    for (std::string_view line : text::Lines(text)) {
        std::string_view key;
        std::string_view value;
        if (!text::split_key_value(line, key, value)) {
            key = strip_colon(text::trim(line));
            value = {};
        }
        key = strip_colon(key);
        for (size_t i = 0; i < keys.size(); ++i) {
            if (keys[i] != key)
                continue;
            auto number = text::parse_u64(value);
            if (!number)
                return bad_value(key, value);
            values[i] = *number;
            break;
        }
    }
    return ok();
}

}  // namespace colmet::node::backends
