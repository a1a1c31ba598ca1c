// msgpack packing helpers shared by the wire encoder and the control
// protocol: a packer appending to a std::string, strings and string arrays.
#pragma once

#include <msgpack.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::wire::pack {

struct StringWriter {
    std::string &out;
    void write(const char *p, size_t n) { out.append(p, n); }
};
using Packer = msgpack::packer<StringWriter>;

inline void str(Packer &pk, std::string_view s)
{
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

inline void str_array(Packer &pk, const std::vector<std::string> &items)
{
    pk.pack_array(static_cast<uint32_t>(items.size()));
    for (const auto &s : items)
        str(pk, s);
}

}  // namespace colmet::wire::pack
