#include "collector/sinks/hdf5/RowBuffer.hpp"

#include <algorithm>
#include <cstring>

namespace colmet::collector::hdf5 {

namespace {

// Bookkeeping a block costs beside its bytes (its entry, malloc's header).
constexpr size_t k_block_overhead = 32;

}  // namespace

RowBuffer::RowBuffer(size_t row_bytes) : m_row_bytes(std::max<size_t>(row_bytes, 1)) {}

size_t RowBuffer::block_rows(size_t index) const
{
    const size_t shift = std::min<size_t>(index, 16);
    const size_t bytes = std::min(k_first_block_bytes << shift, k_max_block_bytes);
    return std::max<size_t>(bytes / m_row_bytes, 1);
}

size_t RowBuffer::growth_bound(size_t row_bytes) { return std::max(k_max_block_bytes, row_bytes) + k_block_overhead; }

unsigned char *RowBuffer::append()
{
    if (m_in_use == 0 || m_last_rows == m_blocks[m_in_use - 1].capacity_rows) {
        if (m_in_use == m_blocks.size()) {
            Block block;
            block.capacity_rows = block_rows(m_blocks.size());
            block.bytes = std::make_unique_for_overwrite<unsigned char[]>(block.capacity_rows * m_row_bytes);
            m_allocated += block.capacity_rows * m_row_bytes + k_block_overhead;
            m_blocks.push_back(std::move(block));
        }
        ++m_in_use;
        m_last_rows = 0;
    }
    unsigned char *row = m_blocks[m_in_use - 1].bytes.get() + m_last_rows * m_row_bytes;
    ++m_last_rows;
    ++m_rows;
    return row;
}

void RowBuffer::copy(size_t first, size_t count, unsigned char *dst) const
{
    // Flushes copy rows in order, a chunk at a time: start from where the
    // last copy ended when it lies before `first`.
    size_t block = 0, block_first = 0;
    if (m_cursor_block < m_in_use && m_cursor_first <= first) {
        block = m_cursor_block;
        block_first = m_cursor_first;
    }
    while (count > 0 && block < m_in_use) {
        const size_t rows_here = m_blocks[block].capacity_rows;
        if (first < block_first + rows_here) {
            const size_t offset = first - block_first;
            const size_t take = std::min(count, rows_here - offset);
            std::memcpy(dst, m_blocks[block].bytes.get() + offset * m_row_bytes, take * m_row_bytes);
            dst += take * m_row_bytes;
            first += take;
            count -= take;
            m_cursor_block = block;
            m_cursor_first = block_first;
        }
        block_first += rows_here;
        ++block;
    }
}

void RowBuffer::clear()
{
    if (m_blocks.size() > 1) {
        for (size_t i = 1; i < m_blocks.size(); ++i)
            m_allocated -= m_blocks[i].capacity_rows * m_row_bytes + k_block_overhead;
        m_blocks.resize(1);
    }
    m_rows = 0;
    m_last_rows = 0;
    m_in_use = 0;
    m_cursor_block = m_cursor_first = 0;
}

void RowBuffer::release()
{
    m_blocks.clear();
    m_blocks.shrink_to_fit();
    m_allocated = 0;
    m_rows = 0;
    m_last_rows = 0;
    m_in_use = 0;
    m_cursor_block = m_cursor_first = 0;
}

}  // namespace colmet::collector::hdf5
