// Appends rows to one chunked dataset whose chunks span whole rows (1-D
// [rows], or 2-D [rows, width] with chunks of [chunk_rows, width]) by writing
// whole chunks with H5Dwrite_chunk, filtered by ChunkCodec. The rows of the
// last, partly filled chunk (the tail) stay in memory, so the next append
// rewrites that chunk from memory instead of reading and inflating it back.
// What a reader sees is exactly what H5Dwrite would have stored: the
// dataset's own filter pipeline (shuffle + deflate, or none) decodes it.
#pragma once

#include "collector/sinks/hdf5/ChunkCodec.hpp"
#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "common/result.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace colmet::collector::hdf5 {

class ChunkAppender {
public:
    // Attach to `dataset`, which holds `rows` rows of elements of mem_type
    // (H5T_NATIVE_INT64 or H5T_NATIVE_DOUBLE, which must be the dataset's
    // own type): reads its chunk shape, fill value and filter pipeline
    // (shuffle then deflate, or no filter: anything else is an error) and
    // the rows of its last, partial chunk (Errc::parse when that chunk
    // cannot be read back).
    static Result<ChunkAppender> attach(hid_t dataset, hid_t mem_type, uint64_t rows);

    // Copies rows [first, first + count) of the rows being appended into dst.
    using RowCopy = std::function<void(size_t first, size_t count, unsigned char *dst)>;

    // Write k rows (row-major, row_bytes() each) after the existing ones:
    // extends the dataset, then writes every chunk from the tail's first row
    // to the end. On failure nothing in memory changes (and the caller must
    // not use the file any more: see JobWriter::abandon).
    Result<void> append(hid_t dataset, const void *rows, size_t k, ChunkCodec &codec);
    Result<void> append(hid_t dataset, const RowCopy &rows, size_t k, ChunkCodec &codec);

    size_t row_bytes() const { return m_row_bytes; }
    uint64_t chunk_rows() const { return m_chunk_rows; }
    uint64_t rows() const { return m_rows; }
    // Bytes held in memory (the tail).
    size_t memory_bytes() const { return m_tail.capacity(); }

private:
    ChunkAppender() = default;

    int m_rank = 1;
    uint64_t m_width = 1;  // elements per row
    size_t m_elem_size = 8;
    size_t m_row_bytes = 8;
    uint64_t m_chunk_rows = 1;
    bool m_filtered = false;            // shuffle + deflate
    unsigned char m_fill[8] = {};       // the dataset's fill value, one element
    uint64_t m_rows = 0;                // rows in the dataset
    std::vector<unsigned char> m_tail;  // rows of the last chunk: m_rows % m_chunk_rows of them
};

}  // namespace colmet::collector::hdf5
