// Reading the control protocol's msgpack bodies: bounded unpacking, typed
// views of msgpack objects, the checks shared by the request decoders and
// a walk over a map's string keys. Internal to colmet_control_protocol.
#pragma once

#include "common/result.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::node::control::detail {

using msgpack::object;

// A parsed body that must be one map: limits keep a hostile frame from
// allocating much.
Result<msgpack::object_handle> unpack_map(std::string_view body);

std::optional<std::string_view> as_str(const object &o);
std::optional<double> as_number(const object &o);
std::optional<uint64_t> as_uint(const object &o);
Result<std::vector<std::string>> str_array(const object &o, const std::string &field, size_t max_items);

// A sampling period within the sampler's bounds; errors name `field`.
Result<double> check_period(double p, const std::string &field);
// Split like --perfhw-list and check each name's characters.
Result<std::vector<std::string>> check_events(const std::vector<std::string> &items, const std::string &field);

struct KeySeen {
    std::vector<std::string_view> keys;
    bool add(std::string_view k)
    {
        for (auto s : keys)
            if (s == k)
                return false;
        keys.push_back(k);
        return true;
    }
};

// How the keys of a map are checked: which kind of error, the text for a key
// that is not a string, and, when repeats are refused, what precedes
// "key \"k\" given twice".
struct KeyRules {
    Error (*error)(std::string);
    const char *not_a_string;
    const char *twice_prefix = nullptr;  // nullptr: a repeated key is not checked
};

// Calls fn(key, value) for each entry of the map m, in order, and stops at
// the first error, its own or fn's.
template <typename Fn>
Result<void> for_each_entry(const object &m, const KeyRules &rules, Fn &&fn)
{
    KeySeen seen;
    for (uint32_t i = 0; i < m.via.map.size; ++i) {
        auto key = as_str(m.via.map.ptr[i].key);
        if (!key)
            return rules.error(rules.not_a_string);
        if (rules.twice_prefix && !seen.add(*key))
            return rules.error(std::string(rules.twice_prefix) + "key \"" + std::string(*key) + "\" given twice");
        if (auto r = fn(*key, m.via.map.ptr[i].val); !r)
            return r;
    }
    return ok();
}

// An unknown key as shown in an error: at most 64 characters, printable.
std::string shown_key(std::string_view key);

}  // namespace colmet::node::control::detail
