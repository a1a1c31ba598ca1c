// A snappy block (snappy's raw format, what remote write's
// "Content-Encoding: snappy" means) written from the literals and the
// back-references that the caller chooses.
//
// A general compressor such as snappy::Compress finds repeats by hashing
// every few bytes of its input. The remote-write encoder already knows its
// repeats: every point of a message carries the same labels, and a series'
// name comes back with every message. Saying so costs a few bytes per
// repeat instead of a search over ~110 bytes per point, which was the
// largest cost of the time-series sink in the collector (docs/performance.md).
// Any snappy decoder reads the result (tests/unit/collector/sinks/tsdb checks it with
// libsnappy's).
//
//   SnappyWriter w;
//   const uint64_t at = w.position();
//   w.literal("abcd", 4);
//   w.copy(at, 4);                  // "abcdabcd"
//   std::string block = w.take();   // then empty, for the next block
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace colmet::collector::tsdb {

class SnappyWriter {
public:
    // `n` bytes as they are.
    void literal(const char *data, size_t n)
    {
        if (n == 0)
            return;
        std::memcpy(literal_space(n), data, n);
        literal_end(n);
    }
    // A literal written in place: room for at most `max` bytes, then
    // literal_end(bytes written). (One call per point instead of a memcpy
    // for each of its few bytes.)
    char *literal_space(size_t max)
    {
        reserve(max + 1);
        if (m_literal_tag == k_no_literal)
            m_literal_tag = m_size++;  // its tag, written when its length is known
        return m_data.get() + m_size;
    }
    void literal_end(size_t n)
    {
        m_size += n;
        m_position += n;
    }
    // The `n` bytes that start at uncompressed offset `from` again
    // (from + n <= position(); n may be 0).
    void copy(uint64_t from, size_t n)
    {
        if (n == 0)
            return;
        close_literal();
        const uint64_t offset = m_position - from;  // the same for every piece of a long one
        m_position += n;
        reserve(5 * (n / 60 + 1));
        if (n <= 64)
            copy_element(offset, n);
        else
            copy_pieces(offset, n);
    }
    // Uncompressed bytes written so far (at most 2^32 - 1: snappy's limit).
    uint64_t position() const { return m_position; }
    // The block: the uncompressed length, then the elements. Starts anew.
    std::string take();

private:
    void reserve(size_t n)
    {
        if (m_size + n > m_capacity)
            grow(n);
    }
    void close_literal()
    {
        if (m_literal_tag == k_no_literal)
            return;
        const size_t n = m_size - m_literal_tag - 1;
        if (n > 60)
            return close_long_literal();
        m_data[m_literal_tag] = static_cast<char>((n - 1) << 2);
        m_literal_tag = k_no_literal;
    }
    // One copy element of `n` (1 to 64) bytes, in its shortest form (room
    // made by the caller).
    void copy_element(uint64_t offset, size_t n)
    {
        char *p = m_data.get() + m_size;
        if (n >= 4 && n <= 11 && offset < 2048) {
            p[0] = static_cast<char>(((offset >> 8) << 5) | ((n - 4) << 2) | 1);
            p[1] = static_cast<char>(offset & 0xff);
            m_size += 2;
        } else if (offset < (1u << 16)) {
            p[0] = static_cast<char>(((n - 1) << 2) | 2);
            p[1] = static_cast<char>(offset & 0xff);
            p[2] = static_cast<char>(offset >> 8);
            m_size += 3;
        } else {
            p[0] = static_cast<char>(((n - 1) << 2) | 3);
            for (int i = 0; i < 4; ++i)
                p[1 + i] = static_cast<char>((offset >> (8 * i)) & 0xff);
            m_size += 5;
        }
    }
    void grow(size_t n);
    void close_long_literal();
    void copy_pieces(uint64_t offset, size_t n);

    // The elements, grown without zero-filling (std::string::resize fills).
    std::unique_ptr<char[]> m_data;
    size_t m_size = 0;
    size_t m_capacity = 0;
    static constexpr size_t k_no_literal = SIZE_MAX;
    size_t m_literal_tag = k_no_literal;  // where the open literal's tag byte is
    uint64_t m_position = 0;
};

}  // namespace colmet::collector::tsdb
