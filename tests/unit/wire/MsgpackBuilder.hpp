// Hand-made msgpack bytes for decoder tests: lets a test build messages the
// encoder would refuse to produce (wrong types, duplicate keys, ...).
#pragma once

#include <msgpack.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colmet::test::mp {

struct Writer {
    std::string out;
    void write(const char *p, size_t n) { out.append(p, n); }
};

inline std::string str(std::string_view s)
{
    Writer w;
    msgpack::packer<Writer> pk(w);
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
    return w.out;
}
inline std::string uint(uint64_t v)
{
    Writer w;
    msgpack::packer<Writer>(w).pack_uint64(v);
    return w.out;
}
inline std::string sint(int64_t v)
{
    Writer w;
    msgpack::packer<Writer>(w).pack_int64(v);
    return w.out;
}
inline std::string dbl(double v)
{
    Writer w;
    msgpack::packer<Writer>(w).pack_double(v);
    return w.out;
}
inline std::string nil() { return std::string(1, '\xc0'); }
inline std::string boolean(bool b) { return std::string(1, b ? '\xc3' : '\xc2'); }

inline std::string array(const std::vector<std::string> &items)
{
    Writer w;
    msgpack::packer<Writer>(w).pack_array(static_cast<uint32_t>(items.size()));
    for (const auto &i : items)
        w.out += i;
    return w.out;
}

// A map from (key, already-packed value) pairs, in the given order
// (duplicates allowed on purpose).
inline std::string map(const std::vector<std::pair<std::string, std::string>> &entries)
{
    Writer w;
    msgpack::packer<Writer>(w).pack_map(static_cast<uint32_t>(entries.size()));
    for (const auto &[k, v] : entries) {
        w.out += str(k);
        w.out += v;
    }
    return w.out;
}

using Entries = std::vector<std::pair<std::string, std::string>>;

// A valid one-backend sample, as entries so tests can alter one field.
inline Entries valid_backend_entries()
{
    return {{"name", str("cgroup_cpu")},
            {"scope", str("job")},
            {"metrics", array({array({str("usage"), str("s"), str("counter")})})},
            {"values", array({dbl(1.5)})}};
}

inline Entries valid_message_entries()
{
    return {{"v", uint(1)},
            {"kind", str("sample")},
            {"host", str("node-1")},
            {"job", str("123_4")},
            {"sender", str("node-1/42/1700000000")},
            {"seq", uint(7)},
            {"t", uint(1700000000000000000ULL)},
            {"backends", array({map(valid_backend_entries())})}};
}

inline Entries replace(Entries e, const std::string &key, const std::string &value)
{
    for (auto &[k, v] : e)
        if (k == key)
            v = value;
    return e;
}

inline Entries without(Entries e, const std::string &key)
{
    std::erase_if(e, [&](const auto &kv) { return kv.first == key; });
    return e;
}

}  // namespace colmet::test::mp
