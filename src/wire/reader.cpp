#include "wire/reader.hpp"

#include <bit>
#include <cstring>

namespace colmet::wire::mp {
namespace {

enum class Status { ok, truncated, invalid };

static_assert(std::endian::native == std::endian::little, "load_be assumes a little-endian host");

template <typename T>
T load_be(const unsigned char *p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (sizeof(T) == 2)
        return __builtin_bswap16(v);
    else if constexpr (sizeof(T) == 4)
        return __builtin_bswap32(v);
    else
        return __builtin_bswap64(v);
}

uint32_t load_len(const unsigned char *p, size_t n)
{
    return n == 1 ? *p : n == 2 ? load_be<uint16_t>(p) : load_be<uint32_t>(p);
}

// Read the header of one item at p (and the payload of a scalar, str, bin
// or ext), advancing p past what it read. Never reads at or past end. The
// common tags of colmet messages (fix-sized ints, strings, arrays, maps and
// float64) come first.
inline Status read_item(const unsigned char *&p, const unsigned char *end, Item &it)
{
    if (p >= end)
        return Status::truncated;
    const unsigned char tag = *p++;
    const size_t left = static_cast<size_t>(end - p);
    if (tag >= 0xa0 && tag <= 0xbf) {  // fixstr
        it.type = Type::str;
        it.size = tag & 0x1fu;
        if (left < it.size)
            return Status::truncated;
        it.str = reinterpret_cast<const char *>(p);
        p += it.size;
        return Status::ok;
    }
    if (tag <= 0x7f) {
        it.type = Type::uint;
        it.u = tag;
        return Status::ok;
    }
    if (tag <= 0x9f) {
        it.type = tag <= 0x8f ? Type::map : Type::array;
        it.size = tag & 0x0fu;
        return Status::ok;
    }
    if (tag >= 0xe0) {
        it.type = Type::sint;
        it.i = static_cast<int8_t>(tag);  // NOLINT(bugprone-signed-char-misuse): negative fixint, -32..-1 by design
        return Status::ok;
    }
    switch (tag) {
    case 0xc0:
        it.type = Type::nil;
        return Status::ok;
    case 0xc1:
        return Status::invalid;
    case 0xc2:
    case 0xc3:
        it.type = Type::boolean;
        it.b = tag == 0xc3;
        return Status::ok;
    case 0xca:
        if (left < 4)
            return Status::truncated;
        it.type = Type::f32;
        it.f = static_cast<double>(std::bit_cast<float>(load_be<uint32_t>(p)));
        p += 4;
        return Status::ok;
    case 0xcb:
        if (left < 8)
            return Status::truncated;
        it.type = Type::f64;
        it.f = std::bit_cast<double>(load_be<uint64_t>(p));
        p += 8;
        return Status::ok;
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
        const size_t n = size_t{1} << (tag - 0xcc);
        if (left < n)
            return Status::truncated;
        it.type = Type::uint;
        it.u = n == 1 ? *p : n == 2 ? load_be<uint16_t>(p) : n == 4 ? load_be<uint32_t>(p) : load_be<uint64_t>(p);
        p += n;
        return Status::ok;
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
        const size_t n = size_t{1} << (tag - 0xd0);
        if (left < n)
            return Status::truncated;
        const int64_t v = n == 1   ? static_cast<int8_t>(*p)
                          : n == 2 ? static_cast<int16_t>(load_be<uint16_t>(p))
                          : n == 4 ? static_cast<int32_t>(load_be<uint32_t>(p))
                                   : static_cast<int64_t>(load_be<uint64_t>(p));
        p += n;
        if (v >= 0) {  // as msgpack-c: a non-negative signed integer is unsigned
            it.type = Type::uint;
            it.u = static_cast<uint64_t>(v);
        } else {
            it.type = Type::sint;
            it.i = v;
        }
        return Status::ok;
    }
    default:
        break;
    }
    // Tags with a length: str8-32, bin8-32, ext8-32, fixext, array16/32, map16/32.
    size_t len_bytes = 0;
    size_t prefix = 0;  // ext: the type byte
    if (tag >= 0xd9 && tag <= 0xdb) {
        it.type = Type::str;
        len_bytes = size_t{1} << (tag - 0xd9);
    } else if (tag >= 0xc4 && tag <= 0xc6) {
        it.type = Type::bin;
        len_bytes = size_t{1} << (tag - 0xc4);
    } else if (tag >= 0xc7 && tag <= 0xc9) {
        it.type = Type::ext;
        len_bytes = size_t{1} << (tag - 0xc7);
        prefix = 1;
    } else if (tag >= 0xd4 && tag <= 0xd8) {  // fixext 1, 2, 4, 8, 16
        it.type = Type::ext;
        it.size = 1u << (tag - 0xd4);
        prefix = 1;
    } else {  // 0xdc-0xdf
        it.type = tag <= 0xdd ? Type::array : Type::map;
        const size_t n = tag == 0xdc || tag == 0xde ? 2 : 4;
        if (left < n)
            return Status::truncated;
        it.size = load_len(p, n);
        p += n;
        return Status::ok;
    }
    if (left < len_bytes)
        return Status::truncated;
    if (len_bytes > 0) {
        it.size = load_len(p, len_bytes);
        p += len_bytes;
    }
    if (static_cast<size_t>(end - p) < prefix + it.size)
        return Status::truncated;
    p += prefix;
    it.str = reinterpret_cast<const char *>(p);
    p += it.size;
    return Status::ok;
}

std::string hex(unsigned char c)
{
    const char digits[] = "0123456789abcdef";
    return {digits[c >> 4], digits[c & 15]};
}

}  // namespace

Item Cursor::next()
{
    Item it;
    const auto *p = reinterpret_cast<const unsigned char *>(m_p);
    switch (read_item(p, reinterpret_cast<const unsigned char *>(m_end), it)) {
    case Status::ok:
        break;
    case Status::truncated:
        throw FrameError{"truncated message"};
    case Status::invalid:
        throw FrameError{"not valid msgpack (byte 0x" + hex(static_cast<unsigned char>(*m_p)) + " at offset " +
                         std::to_string(m_p - m_begin) + ")"};
    }
    m_p = reinterpret_cast<const char *>(p);
    return it;
}

}  // namespace colmet::wire::mp
