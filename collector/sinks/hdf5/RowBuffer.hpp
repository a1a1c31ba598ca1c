// Rows of a fixed size held in memory until a flush writes them: blocks that
// are never reallocated (a block holds several rows; sizes double from a
// small first block up to k_max_block_bytes), so that appending a row never
// copies the rows before it and grows memory by at most one block. That
// bound (growth_bound()) lets the sink check its memory budget before it
// buffers a message.
//
//   RowBuffer times(sizeof(int64_t));
//   times.append(&t);
//   times.copy(first, count, dst);   // rows [first, first + count) into dst
//   times.clear();                   // after a flush: keeps the first block
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace colmet::collector::hdf5 {

class RowBuffer {
public:
    static constexpr size_t k_first_block_bytes = 512;
    static constexpr size_t k_max_block_bytes = size_t{64} * 1024;

    explicit RowBuffer(size_t row_bytes);
    RowBuffer(RowBuffer &&) noexcept = default;
    RowBuffer &operator=(RowBuffer &&) noexcept = default;

    size_t row_bytes() const { return m_row_bytes; }
    size_t rows() const { return m_rows; }

    // Append one row of row_bytes() bytes; returns its bytes, to be filled.
    unsigned char *append();
    // Copy rows [first, first + count) into dst (count * row_bytes() bytes).
    void copy(size_t first, size_t count, unsigned char *dst) const;
    // Forget every row; keeps the first block (the common case of a few rows
    // between flushes then allocates nothing).
    void clear();
    // Forget every row and free every block.
    void release();

    // Bytes of the blocks allocated.
    size_t memory_bytes() const { return m_allocated; }
    // The most one append() can add to memory_bytes().
    static size_t growth_bound(size_t row_bytes);

private:
    struct Block {
        std::unique_ptr<unsigned char[]> bytes;
        size_t capacity_rows = 0;
    };
    size_t block_rows(size_t index) const;

    size_t m_row_bytes;
    std::vector<Block> m_blocks;
    size_t m_rows = 0;
    size_t m_last_rows = 0;  // rows in the last block in use
    size_t m_in_use = 0;     // blocks holding rows
    size_t m_allocated = 0;
    mutable size_t m_cursor_block = 0;  // where the last copy() ended
    mutable size_t m_cursor_first = 0;  // first row of that block
};

}  // namespace colmet::collector::hdf5
