#include "collector/sinks/hdf5/ChunkAppender.hpp"

#include "collector/sinks/hdf5/Hdf5Io.hpp"

#include <array>
#include <bit>
#include <cstring>

namespace colmet::collector::hdf5 {

// Chunks are written as memory bytes into little-endian datasets.
static_assert(std::endian::native == std::endian::little, "direct chunk writes assume a little-endian host");

namespace {

// Shuffle then deflate (what Segment creates with compression), or nothing.
Result<bool> read_pipeline(hid_t dcpl)
{
    const int n = H5Pget_nfilters(dcpl);
    if (n == 0)
        return false;
    std::array<H5Z_filter_t, 2> ids{};
    for (int i = 0; i < n && i < 2; ++i) {
        unsigned flags = 0;
        size_t nelmts = 0;
        ids[static_cast<size_t>(i)] =
            H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nelmts, nullptr, 0, nullptr, nullptr);
    }
    if (n == 2 && ids[0] == H5Z_FILTER_SHUFFLE && ids[1] == H5Z_FILTER_DEFLATE)
        return true;
    return Error(Errc::unsupported, "filter pipeline other than shuffle + deflate");
}

}  // namespace

Result<ChunkAppender> ChunkAppender::attach(hid_t dataset, hid_t mem_type, uint64_t rows)
{
    ChunkAppender a;
    PropList dcpl{H5Dget_create_plist(dataset)};
    Dataspace space{H5Dget_space(dataset)};
    if (!dcpl || !space)
        return h5_error("read dataset layout");
    if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED)
        return Error(Errc::unsupported, "dataset is not chunked");
    a.m_rank = H5Sget_simple_extent_ndims(space.get());
    std::array<hsize_t, 2> dims{}, chunk{};
    if (a.m_rank < 1 || a.m_rank > 2 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0 ||
        H5Pget_chunk(dcpl.get(), a.m_rank, chunk.data()) != a.m_rank)
        return Error(Errc::unsupported, "dataset is not 1-D or 2-D");
    a.m_width = a.m_rank == 2 ? dims[1] : 1;
    if (a.m_rank == 2 && chunk[1] != dims[1])
        return Error(Errc::unsupported, "chunks do not span whole rows");
    if (chunk[0] == 0 || a.m_width == 0)
        return Error(Errc::unsupported, "empty chunk shape");
    auto filtered = read_pipeline(dcpl.get());
    if (!filtered)
        return filtered.error();
    a.m_filtered = *filtered;
    Datatype stored{H5Dget_type(dataset)};
    if (!stored || H5Tequal(stored.get(), mem_type) <= 0)
        return Error(Errc::unsupported, "dataset type differs from the rows' type");
    a.m_elem_size = H5Tget_size(mem_type);
    if (a.m_elem_size == 0 || a.m_elem_size > sizeof(a.m_fill))
        return Error(Errc::unsupported, "element size");
    // The fill value pads the part of the last chunk beyond the extent, so
    // the rows a later extension uncovers read as the fill value (NaN for
    // values), as HDF5's own writes leave them.
    H5D_fill_value_t fill_state{};
    if (H5Pfill_value_defined(dcpl.get(), &fill_state) < 0 || H5Pget_fill_value(dcpl.get(), mem_type, a.m_fill) < 0)
        return h5_error("read the fill value");
    a.m_row_bytes = a.m_elem_size * a.m_width;
    a.m_chunk_rows = chunk[0];
    a.m_rows = rows;
    const uint64_t tail_rows = rows % a.m_chunk_rows;
    if (tail_rows > 0) {
        a.m_tail.resize(tail_rows * a.m_row_bytes);
        const std::array<hsize_t, 2> start{rows - tail_rows, 0}, count{tail_rows, a.m_width};
        Dataspace mem_space{H5Screate_simple(a.m_rank, count.data(), nullptr)};
        if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
            return h5_error("select the last chunk");
        if (H5Dread(dataset, mem_type, mem_space.get(), space.get(), H5P_DEFAULT, a.m_tail.data()) < 0)
            return Error(Errc::parse, h5_error("read the last chunk").message());
    }
    return a;
}

Result<void> ChunkAppender::append(hid_t dataset, const void *rows, size_t k, ChunkCodec &codec)
{
    const auto *in = static_cast<const unsigned char *>(rows);
    const size_t row_bytes = m_row_bytes;
    return append(
        dataset,
        [in, row_bytes](size_t first, size_t count, unsigned char *dst) {
            if (count > 0)
                std::memcpy(dst, in + first * row_bytes, count * row_bytes);
        },
        k, codec);
}

Result<void> ChunkAppender::append(hid_t dataset, const RowCopy &rows, size_t k, ChunkCodec &codec)
{
    if (k == 0)
        return ok();
    const uint64_t new_rows = m_rows + k;
    const std::array<hsize_t, 2> new_dims{new_rows, m_width};
    if (H5Dset_extent(dataset, new_dims.data()) < 0)
        return h5_error("extend dataset");
    const size_t chunk_bytes = m_chunk_rows * m_row_bytes;
    const size_t tail_rows = m_tail.size() / m_row_bytes;
    std::vector<unsigned char> &chunk = codec.chunk_buffer(chunk_bytes);
    // Rows from the first row of the tail's chunk, in chunk-sized pieces.
    uint64_t first = m_rows - tail_rows;  // a chunk boundary
    size_t used = 0;                      // rows of `rows` consumed
    while (first < new_rows) {
        const size_t from_tail = first < m_rows ? tail_rows : 0;
        const size_t take = static_cast<size_t>(std::min<uint64_t>(m_chunk_rows - from_tail, k - used));
        if (from_tail)
            std::memcpy(chunk.data(), m_tail.data(), from_tail * m_row_bytes);
        rows(used, take, chunk.data() + from_tail * m_row_bytes);
        const size_t filled = (from_tail + take) * m_row_bytes;
        // The rest of a last, partial chunk lies beyond the extent: fill values.
        for (size_t at = filled; at < chunk_bytes; at += m_elem_size)
            std::memcpy(chunk.data() + at, m_fill, m_elem_size);
        auto bytes = m_filtered ? codec.encode(chunk.data(), chunk_bytes, m_elem_size)
                                : std::span<const unsigned char>(chunk.data(), chunk_bytes);
        if (bytes.empty())
            return Error(Errc::internal, "cannot compress a chunk (out of memory?)");
        const std::array<hsize_t, 2> offset{first, 0};
        if (H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, offset.data(), bytes.size(), bytes.data()) < 0)
            return h5_error("write chunk at row " + std::to_string(first));
        used += take;
        first += m_chunk_rows;
    }
    // The new tail: the rows after the last chunk boundary. They are the
    // old tail plus all of `rows` when the tail's chunk is still not full,
    // else the last rows of `rows` only.
    const uint64_t new_tail_rows = new_rows % m_chunk_rows;
    const uint64_t tail_start = new_rows - new_tail_rows;
    if (tail_start < m_rows) {
        const size_t old = m_tail.size();
        m_tail.resize(old + k * m_row_bytes);
        rows(0, k, m_tail.data() + old);
    } else {
        const size_t from_new = static_cast<size_t>(new_tail_rows);
        m_tail.resize(from_new * m_row_bytes);
        if (from_new > 0)
            rows(k - from_new, from_new, m_tail.data());
    }
    // A tail never holds more than a chunk: give back what a full chunk left.
    if (m_tail.capacity() > 2 * m_tail.size() + 4096)
        m_tail.shrink_to_fit();
    m_rows = new_rows;
    return ok();
}

}  // namespace colmet::collector::hdf5
