// A bounded msgpack reader for the strict decoder (decode.cpp): it reads a
// frame item by item in place, never allocates, and never reads past the
// frame. A truncated item or a byte that is not msgpack (0xc1) throws
// FrameError. The reader does not bound sizes: the schema walk checks every
// declared length against its limit before it relies on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace colmet::wire::mp {

enum class Type : uint8_t { nil, boolean, uint, sint, f32, f64, str, bin, array, map, ext };

// One msgpack item. Signed integers >= 0 read as uint (as msgpack-c does).
struct Item {
    Type type = Type::nil;
    uint32_t size = 0;          // bytes of str/bin/ext; elements of array; entries of map
    const char *str = nullptr;  // the bytes of a str, in the frame
    uint64_t u = 0;             // uint
    int64_t i = 0;              // sint (< 0)
    double f = 0;               // f32, f64
    bool b = false;             // boolean

    std::string_view view() const { return {str, size}; }
};

// Why a frame cannot be read: "truncated message" or "not valid msgpack (...)".
struct FrameError {
    std::string message;
};

class Cursor {
public:
    Cursor(const char *begin, const char *end) : m_begin(begin), m_p(begin), m_end(end) {}

    // The next item; throws FrameError. For an array or map the cursor
    // moves to its first element (map: key, value, key, value...); for a
    // str, bin or ext, past its bytes.
    Item next();
    // When the next bytes equal `bytes`, move past them and return true.
    // Used on bytes that were a whole valid value before: msgpack values
    // are prefix-free, so equal bytes are the same whole value again.
    bool skip_if_equal(std::string_view bytes)
    {
        if (static_cast<size_t>(m_end - m_p) < bytes.size() || bytes.compare(0, bytes.size(), m_p, bytes.size()) != 0)
            return false;
        m_p += bytes.size();
        return true;
    }
    const char *pos() const { return m_p; }
    size_t left() const { return static_cast<size_t>(m_end - m_p); }

private:
    const char *m_begin;
    const char *m_p;
    const char *m_end;
};

}  // namespace colmet::wire::mp
