#include "collector/sinks/tsdb/SnappyWriter.hpp"

#include <algorithm>
#include <cstring>

// The elements, after snappy's format_description.txt. A tag byte's low two
// bits say its kind: 00 a literal, 01 a copy with an 11-bit offset and a
// length of 4 to 11, 10 a copy with a 16-bit offset, 11 one with a 32-bit
// offset (both: a length of 1 to 64). Numbers are little-endian.

namespace colmet::collector::tsdb {

void SnappyWriter::grow(size_t n)
{
    const size_t capacity = std::max({m_capacity * 2, m_size + n, size_t{4096}});
    auto grown = std::make_unique_for_overwrite<char[]>(capacity);
    if (m_size > 0)
        std::memcpy(grown.get(), m_data.get(), m_size);
    m_data = std::move(grown);
    m_capacity = capacity;
}

void SnappyWriter::close_long_literal()
{
    // 60 + k - 1 in the tag, then k bytes of the length - 1: the literal
    // moves up by k (rare here: only the first of a batch's repeats are
    // literal).
    const size_t start = m_literal_tag + 1;
    const size_t n = m_size - start;
    m_literal_tag = k_no_literal;
    const uint64_t l = n - 1;
    const size_t k = l < (1u << 8) ? 1 : l < (1u << 16) ? 2 : l < (1u << 24) ? 3 : 4;
    reserve(k);
    m_size += k;
    std::memmove(m_data.get() + start + k, m_data.get() + start, n);
    m_data[start - 1] = static_cast<char>((59 + k) << 2);
    for (size_t i = 0; i < k; ++i)
        m_data[start + i] = static_cast<char>((l >> (8 * i)) & 0xff);
}

void SnappyWriter::copy_pieces(uint64_t offset, size_t n)
{
    // Pieces of at most 64 (room made by copy()); a last piece under 4
    // would be valid too, but 60 and a rest of 4 or more keeps the short
    // form open to the rest.
    while (n > 0) {
        size_t piece = std::min<size_t>(n, 64);
        if (n > 64 && n - 64 < 4)
            piece = 60;
        copy_element(offset, piece);
        n -= piece;
    }
}

std::string SnappyWriter::take()
{
    close_literal();
    char length[10];
    size_t k = 0;
    for (uint64_t v = m_position;; v >>= 7) {
        length[k++] = static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    std::string block;
    block.reserve(k + m_size);
    block.append(length, k);
    block.append(m_data.get(), m_size);
    m_size = 0;  // keeps the memory for the next block
    m_position = 0;
    return block;
}

}  // namespace colmet::collector::tsdb
