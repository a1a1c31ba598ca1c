// The direct chunk writer of the HDF5 sink (ChunkAppender + ChunkCodec):
// rows appended in whole chunks with H5Dwrite_chunk, shuffled and deflated by
// the collector itself, must read back bit for bit through HDF5's own filter
// pipeline (H5Dread), and through h5py. Nothing here decodes with our codec.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "collector/sinks/hdf5/ChunkAppender.hpp"
#include "collector/sinks/hdf5/ChunkCodec.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <sstream>
#include <sys/wait.h>

using namespace colmet;
using namespace colmet::collector::hdf5;

namespace {

enum class Filters {
    none,
    shuffle_deflate,  // what Segment::create makes
    deflate_only,
    shuffle_only,
    deflate_shuffle,  // the right filters in the wrong order
    shuffle_deflate_fletcher32,
};

struct Spec {
    int rank = 2;
    hsize_t width = 3;  // columns of a 2-D dataset
    hsize_t chunk_rows = 4;
    hsize_t chunk_width = 0;  // 0: the whole row
    hid_t file_type = H5T_IEEE_F64LE;
    Filters filters = Filters::shuffle_deflate;
    unsigned deflate_level = 6;  // in the pipeline (the appender uses its codec's level)
    bool nan_fill = true;        // like Segment::create (float64 only)
    bool contiguous = false;     // fixed-size contiguous dataset of fixed_rows rows
    hsize_t fixed_rows = 8;
};

Spec values_spec(Filters filters = Filters::shuffle_deflate)
{
    Spec s;
    s.filters = filters;
    return s;
}

Spec time_spec(Filters filters = Filters::shuffle_deflate)
{
    Spec s;
    s.rank = 1;
    s.width = 1;
    s.file_type = H5T_STD_I64LE;
    s.nan_fill = false;
    s.filters = filters;
    return s;
}

File create_file(const std::filesystem::path &path)
{
    PropList fapl = file_access_plist();
    return File{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())};
}

File open_file(const std::filesystem::path &path, unsigned flags = H5F_ACC_RDWR)
{
    PropList fapl = file_access_plist();
    return File{H5Fopen(path.c_str(), flags, fapl.get())};
}

Dataset make_dataset(hid_t file, const char *name, const Spec &s)
{
    const std::array<hsize_t, 2> dims{s.contiguous ? s.fixed_rows : 0, s.width};
    const std::array<hsize_t, 2> max_dims{s.contiguous ? s.fixed_rows : H5S_UNLIMITED, s.width};
    Dataspace space{H5Screate_simple(s.rank, dims.data(), max_dims.data())};
    PropList dcpl{H5Pcreate(H5P_DATASET_CREATE)};
    if (!s.contiguous) {
        const std::array<hsize_t, 2> chunk{s.chunk_rows, s.chunk_width ? s.chunk_width : s.width};
        EXPECT_GE(H5Pset_chunk(dcpl.get(), s.rank, chunk.data()), 0);
        switch (s.filters) {
        case Filters::none:
            break;
        case Filters::shuffle_deflate:
            EXPECT_GE(H5Pset_shuffle(dcpl.get()), 0);
            EXPECT_GE(H5Pset_deflate(dcpl.get(), s.deflate_level), 0);
            break;
        case Filters::deflate_only:
            EXPECT_GE(H5Pset_deflate(dcpl.get(), s.deflate_level), 0);
            break;
        case Filters::shuffle_only:
            EXPECT_GE(H5Pset_shuffle(dcpl.get()), 0);
            break;
        case Filters::deflate_shuffle:
            EXPECT_GE(H5Pset_deflate(dcpl.get(), s.deflate_level), 0);
            EXPECT_GE(H5Pset_shuffle(dcpl.get()), 0);
            break;
        case Filters::shuffle_deflate_fletcher32:
            EXPECT_GE(H5Pset_shuffle(dcpl.get()), 0);
            EXPECT_GE(H5Pset_deflate(dcpl.get(), s.deflate_level), 0);
            EXPECT_GE(H5Pset_fletcher32(dcpl.get()), 0);
            break;
        }
    }
    if (s.nan_fill) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        EXPECT_GE(H5Pset_fill_value(dcpl.get(), H5T_NATIVE_DOUBLE, &nan), 0);
    }
    Dataset ds{H5Dcreate2(file, name, s.file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)};
    EXPECT_TRUE(ds.valid()) << "create dataset " << name;
    return ds;
}

Dataset open_dataset(hid_t file, const char *name)
{
    Dataset ds{H5Dopen2(file, name, H5P_DEFAULT)};
    EXPECT_TRUE(ds.valid()) << "open dataset " << name;
    return ds;
}

// Current dimensions of a dataset (dims[1] == 1 for a 1-D one).
std::array<hsize_t, 2> extent(hid_t ds)
{
    Dataspace space{H5Dget_space(ds)};
    std::array<hsize_t, 2> dims{0, 1};
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    return dims;
}

// The whole dataset read with HDF5's H5Dread (its own filter pipeline).
std::vector<unsigned char> read_all(hid_t ds, hid_t mem_type)
{
    const auto dims = extent(ds);
    std::vector<unsigned char> out(dims[0] * dims[1] * H5Tget_size(mem_type));
    if (!out.empty()) {
        EXPECT_GE(H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0) << "H5Dread";
    }
    return out;
}

// Bit-for-bit comparison (NaN != NaN, so no ==); names the first difference.
::testing::AssertionResult same_bytes(const std::vector<unsigned char> &got, const void *want, size_t want_bytes,
                                      size_t elem_size)
{
    if (got.size() != want_bytes)
        return ::testing::AssertionFailure() << "read " << got.size() << " bytes, expected " << want_bytes;
    if (want_bytes == 0 || std::memcmp(got.data(), want, want_bytes) == 0)
        return ::testing::AssertionSuccess();
    const auto *w = static_cast<const unsigned char *>(want);
    size_t i = 0;
    while (got[i] == w[i])
        ++i;
    const size_t e = i / elem_size;
    uint64_t g = 0, x = 0;
    std::memcpy(&g, got.data() + e * elem_size, std::min<size_t>(elem_size, 8));
    std::memcpy(&x, w + e * elem_size, std::min<size_t>(elem_size, 8));
    return ::testing::AssertionFailure() << "first difference at element " << e << " (byte " << i << "): got 0x"
                                         << std::hex << g << ", expected 0x" << x;
}

double bits(uint64_t b) { return std::bit_cast<double>(b); }

// n distinct doubles: NaNs (quiet, with payload, negative, signalling), signed
// zeros, infinities, huge, tiny, subnormal and ordinary values.
std::vector<double> distinct_doubles(size_t n)
{
    const std::vector<double> specials{
        std::numeric_limits<double>::quiet_NaN(),
        bits(0x7ff8'0000'0000'0123),  // NaN with a payload
        bits(0xfff8'0000'0000'0000),  // negative NaN
        bits(0x7ff0'0000'0000'0001),  // signalling NaN
        -0.0,
        0.0,
        std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(),
        DBL_MAX,
        -DBL_MAX,
        std::numeric_limits<double>::denorm_min(),
        -std::numeric_limits<double>::denorm_min() * 7,
        DBL_MIN / 3,                  // subnormal
        bits(0x000f'ffff'ffff'ffff),  // largest subnormal
        1e300,
        -1e-300,
        DBL_MIN,
        -1.0,
    };
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) {
        if (i % 3 == 0 && i / 3 < specials.size())
            v[i] = specials[i / 3];
        else
            v[i] = std::ldexp((i % 2 ? -1.0 : 1.0) * (1.0 + static_cast<double>(i) / 1024.0),
                              static_cast<int>((i * 37) % 400) - 200);
    }
    return v;
}

// n distinct int64 values: time-like, with the extremes.
std::vector<int64_t> distinct_times(size_t n)
{
    const std::vector<int64_t> specials{
        std::numeric_limits<int64_t>::min(),     std::numeric_limits<int64_t>::max(),     0, -1,
        std::numeric_limits<int64_t>::min() + 1, std::numeric_limits<int64_t>::max() - 1, 1,
    };
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = i % 2 == 1 && i / 2 < specials.size()
                   ? specials[i / 2]
                   : test::h5::k_t0 + static_cast<int64_t>(i) * test::h5::k_second + static_cast<int64_t>(i * i);
    return v;
}

// Storage of the chunk holding row `row`; 0 when it is not allocated.
hsize_t chunk_storage(hid_t ds, hsize_t row)
{
    const std::array<hsize_t, 2> offset{row, 0};
    hsize_t nbytes = 0;
    ErrorSilencer quiet;
    if (H5Dget_chunk_storage_size(ds, offset.data(), &nbytes) < 0)
        return 0;
    return nbytes;
}

size_t total_rows(const std::vector<size_t> &pieces)
{
    return std::accumulate(pieces.begin(), pieces.end(), size_t{0});
}

// Appends `data` (row-major, `width` elements per row) in the given pieces;
// after each append, reads the whole dataset back with H5Dread and compares
// it bit for bit with the rows appended so far.
template <typename T>
void append_in_pieces(hid_t ds, hid_t mem_type, ChunkAppender &out, ChunkCodec &codec, const std::vector<T> &data,
                      size_t width, const std::vector<size_t> &pieces, size_t first_row = 0)
{
    size_t row = first_row;
    for (size_t k : pieces) {
        SCOPED_TRACE("append " + std::to_string(k) + " rows after " + std::to_string(row));
        ASSERT_LE((row + k) * width, data.size());
        auto r = out.append(ds, data.data() + row * width, k, codec);
        ASSERT_TRUE(r.ok()) << r.error().message();
        row += k;
        EXPECT_EQ(out.rows(), row);
        EXPECT_EQ(extent(ds)[0], row);
        EXPECT_EQ(extent(ds)[1], width);
        auto got = read_all(ds, mem_type);
        ASSERT_TRUE(same_bytes(got, data.data(), row * width * sizeof(T), sizeof(T)));
    }
}

class ChunkAppenderTest : public ::testing::Test {
protected:
    std::filesystem::path file_path() const { return m_tree.path("chunks.h5"); }

    test::FakeTree m_tree;
};

const std::vector<size_t> k_uneven{1, 3, 5, 0, 7, 4};

// Create dataset `name` in a new file, append `data` (rows of `width`
// elements) in the k_uneven pieces, comparing after each, then close
// everything, reopen the file and compare again (nothing left in a cache).
template <typename T>
void round_trip(const std::filesystem::path &path, const char *name, const Spec &spec, hid_t mem_type,
                const std::vector<T> &data, size_t width, int level)
{
    File file = create_file(path);
    ASSERT_TRUE(file.valid());
    Dataset ds = make_dataset(file.get(), name, spec);
    ASSERT_TRUE(ds.valid());
    auto out = ChunkAppender::attach(ds.get(), mem_type, 0);
    ASSERT_TRUE(out.ok()) << out.error().message();
    EXPECT_EQ(out->chunk_rows(), 4u);
    EXPECT_EQ(out->row_bytes(), width * sizeof(T));
    EXPECT_EQ(out->rows(), 0u);
    ChunkCodec codec(level);
    append_in_pieces(ds.get(), mem_type, *out, codec, data, width, k_uneven);

    ds.reset();
    ASSERT_TRUE(file.reset());
    File again = open_file(path, H5F_ACC_RDONLY);
    ASSERT_TRUE(again.valid());
    Dataset ds2 = open_dataset(again.get(), name);
    EXPECT_TRUE(same_bytes(read_all(ds2.get(), mem_type), data.data(), data.size() * sizeof(T), sizeof(T)));
}

// 1. 2-D float64 [rows, 3], chunks of 4 rows, shuffle + deflate, NaN fill.
TEST_F(ChunkAppenderTest, values_2d_float64_shuffle_deflate_read_back_bit_for_bit)
{
    const size_t rows = total_rows(k_uneven);
    ASSERT_EQ(rows, 20u);
    round_trip(file_path(), "values", values_spec(), H5T_NATIVE_DOUBLE, distinct_doubles(rows * 3), 3, 6);
}

// 2. 1-D int64, chunks of 4.
TEST_F(ChunkAppenderTest, time_1d_int64_shuffle_deflate_read_back_bit_for_bit)
{
    round_trip(file_path(), "time", time_spec(), H5T_NATIVE_INT64, distinct_times(total_rows(k_uneven)), 1, 1);
}

// Many piece patterns and chunk sizes, including appends that stay inside a
// partial chunk, fill it exactly, and cross several chunk boundaries.
TEST_F(ChunkAppenderTest, piece_patterns_over_several_chunk_sizes)
{
    const std::vector<std::vector<size_t>> patterns{
        {1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 1, 1, 2, 1, 3, 2}, {3, 0, 1, 11, 2, 2}, {13, 1, 6}, {4, 4, 4, 1, 3},
    };
    const std::vector<hsize_t> chunk_sizes{1, 3, 4, 7};
    ChunkCodec codec(9);
    int n = 0;
    for (hsize_t chunk : chunk_sizes) {
        for (const auto &pieces : patterns) {
            SCOPED_TRACE("chunk " + std::to_string(chunk) + " pattern " + std::to_string(n));
            File file = create_file(file_path());
            ASSERT_TRUE(file.valid());
            Spec vs = values_spec();
            vs.chunk_rows = chunk;
            Spec ts = time_spec();
            ts.chunk_rows = chunk;
            Dataset values = make_dataset(file.get(), "values", vs);
            Dataset time = make_dataset(file.get(), "time", ts);
            auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
            auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 0);
            ASSERT_TRUE(vout.ok() && tout.ok());
            const size_t rows = total_rows(pieces);
            const auto vdata = distinct_doubles(rows * 3);
            const auto tdata = distinct_times(rows);
            append_in_pieces(values.get(), H5T_NATIVE_DOUBLE, *vout, codec, vdata, 3, pieces);
            append_in_pieces(time.get(), H5T_NATIVE_INT64, *tout, codec, tdata, 1, pieces);
            ++n;
        }
    }
}

// One codec shared by datasets of different chunk sizes (as Segment shares
// it between time, 1024-row chunks, and values), appends interleaved.
TEST_F(ChunkAppenderTest, one_codec_for_datasets_of_different_chunk_sizes)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Spec ts = time_spec();
    ts.chunk_rows = 1024;
    Spec vs = values_spec();
    vs.chunk_rows = 4;
    Spec ws = values_spec();
    ws.width = 40;
    ws.chunk_rows = 32;
    Dataset time = make_dataset(file.get(), "time", ts);
    Dataset values = make_dataset(file.get(), "values", vs);
    Dataset wide = make_dataset(file.get(), "wide", ws);
    auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 0);
    auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
    auto wout = ChunkAppender::attach(wide.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_TRUE(tout.ok() && vout.ok() && wout.ok());
    const std::vector<size_t> pieces{5, 1, 700, 3, 400, 1, 1000};
    const size_t rows = total_rows(pieces);
    const auto tdata = distinct_times(rows);
    const auto vdata = distinct_doubles(rows * 3);
    const auto wdata = distinct_doubles(rows * 40);
    ChunkCodec codec(1);
    size_t row = 0;
    for (size_t k : pieces) {
        SCOPED_TRACE("append " + std::to_string(k) + " rows after " + std::to_string(row));
        ASSERT_TRUE(tout->append(time.get(), tdata.data() + row, k, codec).ok());
        ASSERT_TRUE(wout->append(wide.get(), wdata.data() + row * 40, k, codec).ok());
        ASSERT_TRUE(vout->append(values.get(), vdata.data() + row * 3, k, codec).ok());
        row += k;
        ASSERT_TRUE(same_bytes(read_all(time.get(), H5T_NATIVE_INT64), tdata.data(), row * 8, 8));
        ASSERT_TRUE(same_bytes(read_all(values.get(), H5T_NATIVE_DOUBLE), vdata.data(), row * 3 * 8, 8));
        ASSERT_TRUE(same_bytes(read_all(wide.get(), H5T_NATIVE_DOUBLE), wdata.data(), row * 40 * 8, 8));
    }
}

// 3. Reattach after a partial chunk: attach() reads the tail back from the
// file, the next append rewrites that chunk with it. Levels 6 and 0 (a level
// 0 codec still compresses a dataset that has filters, at level 1).
class ChunkAppenderReattachTest : public ChunkAppenderTest, public ::testing::WithParamInterface<int> {};

TEST_P(ChunkAppenderReattachTest, reattach_reads_the_tail_and_appends_after_it)
{
    const int level = GetParam();
    // Distinct values, but compressible (small integers and a few specials).
    std::vector<double> vdata(size_t{11} * 3);
    for (size_t i = 0; i < vdata.size(); ++i)
        vdata[i] = static_cast<double>(i) + 1.0;
    vdata[4] = std::numeric_limits<double>::quiet_NaN();    // row 1
    vdata[13] = -0.0;                                       // row 4 (in the tail)
    vdata[15] = std::numeric_limits<double>::denorm_min();  // row 5 (in the tail)
    vdata[17] = bits(0x7ff8'0000'0000'0042);                // row 5, a NaN with a payload
    std::vector<int64_t> tdata(11);
    for (size_t i = 0; i < tdata.size(); ++i)
        tdata[i] = test::h5::k_t0 + static_cast<int64_t>(i) * test::h5::k_second;
    tdata[5] = std::numeric_limits<int64_t>::min();  // in the tail

    {
        File file = create_file(file_path());
        ASSERT_TRUE(file.valid());
        Dataset values = make_dataset(file.get(), "values", values_spec());
        Dataset time = make_dataset(file.get(), "time", time_spec());
        auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
        auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 0);
        ASSERT_TRUE(vout.ok() && tout.ok());
        ChunkCodec codec(level);
        ASSERT_TRUE(vout->append(values.get(), vdata.data(), 6, codec).ok());
        ASSERT_TRUE(tout->append(time.get(), tdata.data(), 6, codec).ok());
        ASSERT_TRUE(values.reset());
        ASSERT_TRUE(time.reset());
        ASSERT_TRUE(file.reset());
    }

    File file = open_file(file_path());
    ASSERT_TRUE(file.valid());
    Dataset values = open_dataset(file.get(), "values");
    Dataset time = open_dataset(file.get(), "time");
    ASSERT_EQ(extent(values.get())[0], 6u);
    ASSERT_EQ(extent(time.get())[0], 6u);
    auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 6);
    auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 6);
    ASSERT_TRUE(vout.ok()) << vout.error().message();
    ASSERT_TRUE(tout.ok()) << tout.error().message();
    EXPECT_EQ(vout->rows(), 6u);
    EXPECT_EQ(tout->rows(), 6u);

    ChunkCodec codec(level);
    EXPECT_EQ(codec.level(), level);
    ASSERT_TRUE(vout->append(values.get(), vdata.data() + size_t{6} * 3, 5, codec).ok());
    ASSERT_TRUE(tout->append(time.get(), tdata.data() + 6, 5, codec).ok());
    EXPECT_EQ(vout->rows(), 11u);
    // Through the same dataset handles (attach() read the tail chunk into
    // HDF5's chunk cache; the direct write must not leave it stale) ...
    EXPECT_TRUE(same_bytes(read_all(values.get(), H5T_NATIVE_DOUBLE), vdata.data(), size_t{11} * 3 * 8, 8));
    EXPECT_TRUE(same_bytes(read_all(time.get(), H5T_NATIVE_INT64), tdata.data(), size_t{11} * 8, 8));

    // Filtered and compressed, even at level 0: every chunk is stored as a
    // zlib stream (read raw, not decoded), and the compressible values
    // chunks take fewer bytes than their raw 96.
    for (hsize_t row : {0, 4, 8}) {
        SCOPED_TRACE("chunk at row " + std::to_string(row));
        const hsize_t v = chunk_storage(values.get(), row);
        EXPECT_GT(v, 0u);
        EXPECT_LT(v, 4u * 3 * 8);
        for (hid_t ds : {values.get(), time.get()}) {
            const hsize_t size = chunk_storage(ds, row);
            ASSERT_GT(size, 2u);
            std::vector<unsigned char> stored(size);
            const std::array<hsize_t, 2> offset{row, 0};
            uint32_t mask = 0xffff;
            ASSERT_GE(H5Dread_chunk(ds, H5P_DEFAULT, offset.data(), &mask, stored.data()), 0);
            EXPECT_EQ(mask, 0u);
            // zlib header: CM 8 (deflate), and (CMF * 256 + FLG) % 31 == 0.
            EXPECT_EQ(stored[0] & 0x0f, 8);
            EXPECT_EQ((stored[0] * 256 + stored[1]) % 31, 0);
        }
    }

    // ... and after closing and reopening the file.
    values.reset();
    time.reset();
    ASSERT_TRUE(file.reset());
    File again = open_file(file_path(), H5F_ACC_RDONLY);
    Dataset values2 = open_dataset(again.get(), "values");
    Dataset time2 = open_dataset(again.get(), "time");
    EXPECT_TRUE(same_bytes(read_all(values2.get(), H5T_NATIVE_DOUBLE), vdata.data(), size_t{11} * 3 * 8, 8));
    EXPECT_TRUE(same_bytes(read_all(time2.get(), H5T_NATIVE_INT64), tdata.data(), size_t{11} * 8, 8));
}

INSTANTIATE_TEST_SUITE_P(Levels, ChunkAppenderReattachTest, ::testing::Values(6, 0),
                         [](const ::testing::TestParamInfo<int> &param) {
                             return "level_" + std::to_string(param.param);
                         });

// Reattach at a chunk boundary (no tail) and to an empty dataset.
TEST_F(ChunkAppenderTest, reattach_at_a_chunk_boundary_and_when_empty)
{
    const auto data = distinct_doubles(size_t{13} * 3);
    {
        File file = create_file(file_path());
        Dataset values = make_dataset(file.get(), "values", values_spec());
        Dataset empty = make_dataset(file.get(), "empty", values_spec());
        auto out = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
        ASSERT_TRUE(out.ok());
        ChunkCodec codec(1);
        ASSERT_TRUE(out->append(values.get(), data.data(), 8, codec).ok());
    }
    File file = open_file(file_path());
    ASSERT_TRUE(file.valid());
    Dataset values = open_dataset(file.get(), "values");
    Dataset empty = open_dataset(file.get(), "empty");
    auto out = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 8);
    auto eout = ChunkAppender::attach(empty.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_TRUE(out.ok() && eout.ok());
    ChunkCodec codec(1);
    append_in_pieces(values.get(), H5T_NATIVE_DOUBLE, *out, codec, data, 3, {2, 3}, 8);
    append_in_pieces(empty.get(), H5T_NATIVE_DOUBLE, *eout, codec, data, 3, {0, 5, 2});
}

// 4. No filters: appended and read back; every chunk takes exactly its raw
// size. With shuffle + deflate, compressible rows take fewer bytes.
TEST_F(ChunkAppenderTest, unfiltered_dataset_stores_raw_chunks)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Dataset values = make_dataset(file.get(), "values", values_spec(Filters::none));
    Dataset time = make_dataset(file.get(), "time", time_spec(Filters::none));
    auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
    auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 0);
    ASSERT_TRUE(vout.ok()) << vout.error().message();
    ASSERT_TRUE(tout.ok()) << tout.error().message();
    const size_t rows = total_rows(k_uneven);  // 20 rows, 5 chunks
    const auto vdata = distinct_doubles(rows * 3);
    const auto tdata = distinct_times(rows);
    ChunkCodec codec(6);
    append_in_pieces(values.get(), H5T_NATIVE_DOUBLE, *vout, codec, vdata, 3, k_uneven);
    append_in_pieces(time.get(), H5T_NATIVE_INT64, *tout, codec, tdata, 1, k_uneven);

    EXPECT_EQ(H5Dget_storage_size(values.get()), 5u * 4 * 3 * 8);
    EXPECT_EQ(H5Dget_storage_size(time.get()), 5u * 4 * 8);
    for (hsize_t row = 0; row < 20; row += 4) {
        EXPECT_EQ(chunk_storage(values.get(), row), 4u * 3 * 8) << "row " << row;
        EXPECT_EQ(chunk_storage(time.get(), row), 4u * 8) << "row " << row;
    }

    // A partial last chunk (level 0 codec: no compression anywhere here).
    ChunkCodec raw(0);
    Dataset partial = make_dataset(file.get(), "partial", values_spec(Filters::none));
    auto pout = ChunkAppender::attach(partial.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_TRUE(pout.ok());
    append_in_pieces(partial.get(), H5T_NATIVE_DOUBLE, *pout, raw, vdata, 3, {6, 1});
    EXPECT_EQ(H5Dget_storage_size(partial.get()), 2u * 4 * 3 * 8);

    // Reattached after closing: the raw tail is read back too.
    values.reset();
    time.reset();
    partial.reset();
    ASSERT_TRUE(file.reset());
    File again = open_file(file_path());
    Dataset p2 = open_dataset(again.get(), "partial");
    auto p2out = ChunkAppender::attach(p2.get(), H5T_NATIVE_DOUBLE, 7);
    ASSERT_TRUE(p2out.ok()) << p2out.error().message();
    append_in_pieces(p2.get(), H5T_NATIVE_DOUBLE, *p2out, raw, vdata, 3, {3, 5}, 7);
    EXPECT_EQ(H5Dget_storage_size(p2.get()), 4u * 4 * 3 * 8);
}

TEST_F(ChunkAppenderTest, filtered_compressible_rows_take_fewer_bytes_than_raw)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Spec vs = values_spec();
    vs.chunk_rows = 64;
    Spec ts = time_spec();
    ts.chunk_rows = 64;
    Dataset values = make_dataset(file.get(), "values", vs);
    Dataset time = make_dataset(file.get(), "time", ts);
    auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
    auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 0);
    ASSERT_TRUE(vout.ok() && tout.ok());
    // A counter, a constant gauge and a slowly growing one; 1 s timestamps.
    const size_t rows = 256;  // 4 chunks
    std::vector<double> vdata(rows * 3);
    std::vector<int64_t> tdata(rows);
    for (size_t i = 0; i < rows; ++i) {
        vdata[i * 3] = 0.5 * static_cast<double>(i);
        vdata[i * 3 + 1] = 3e7;
        const size_t step = i / 8;  // grows by one every 8 rows
        vdata[i * 3 + 2] = 1e6 + static_cast<double>(step);
        tdata[i] = test::h5::k_t0 + static_cast<int64_t>(i) * test::h5::k_second;
    }
    ChunkCodec codec(1);
    append_in_pieces(values.get(), H5T_NATIVE_DOUBLE, *vout, codec, vdata, 3, {100, 1, 155});
    append_in_pieces(time.get(), H5T_NATIVE_INT64, *tout, codec, tdata, 1, {100, 1, 155});
    const hsize_t vraw = rows * 3 * 8, traw = rows * 8;
    const hsize_t vsize = H5Dget_storage_size(values.get()), tsize = H5Dget_storage_size(time.get());
    EXPECT_GT(vsize, 0u);
    EXPECT_LT(vsize, vraw) << "values: " << vsize << " bytes for " << vraw << " raw";
    EXPECT_GT(tsize, 0u);
    EXPECT_LT(tsize, traw) << "time: " << tsize << " bytes for " << traw << " raw";
    for (hsize_t row = 0; row < rows; row += 64) {
        EXPECT_LT(chunk_storage(values.get(), row), 64u * 3 * 8) << "row " << row;
        EXPECT_LT(chunk_storage(time.get(), row), 64u * 8) << "row " << row;
    }

    // About what HDF5's own pipeline (shuffle, zlib deflate level 1) stores
    // for the same rows written with H5Dwrite.
    Spec vref = vs, tref = ts;
    vref.deflate_level = tref.deflate_level = 1;
    Dataset values_ref = make_dataset(file.get(), "values_ref", vref);
    Dataset time_ref = make_dataset(file.get(), "time_ref", tref);
    const std::array<hsize_t, 2> dims{rows, 3};
    ASSERT_GE(H5Dset_extent(values_ref.get(), dims.data()), 0);
    ASSERT_GE(H5Dset_extent(time_ref.get(), dims.data()), 0);
    ASSERT_GE(H5Dwrite(values_ref.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, vdata.data()), 0);
    ASSERT_GE(H5Dwrite(time_ref.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, tdata.data()), 0);
    ASSERT_GE(H5Dflush(values_ref.get()), 0);
    ASSERT_GE(H5Dflush(time_ref.get()), 0);
    const hsize_t vref_size = H5Dget_storage_size(values_ref.get()), tref_size = H5Dget_storage_size(time_ref.get());
    EXPECT_LE(vsize, vref_size + vref_size / 4) << "values: ours " << vsize << ", HDF5's " << vref_size;
    EXPECT_LE(tsize, tref_size + tref_size / 4) << "time: ours " << tsize << ", HDF5's " << tref_size;
    std::cout << "[ sizes    ] values " << vsize << " (HDF5 " << vref_size << ", raw " << vraw << "), time " << tsize
              << " (HDF5 " << tref_size << ", raw " << traw << ")\n";
}

// Incompressible rows: a deflate stream larger than the raw chunk must still
// be accepted and read back.
TEST_F(ChunkAppenderTest, incompressible_rows_read_back)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Dataset values = make_dataset(file.get(), "values", values_spec());
    auto out = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_TRUE(out.ok());
    std::vector<double> data(size_t{40} * 3);
    uint64_t x = 0x9e37'79b9'7f4a'7c15;
    for (auto &d : data) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d = bits(x);
    }
    ChunkCodec codec(9);
    append_in_pieces(values.get(), H5T_NATIVE_DOUBLE, *out, codec, data, 3, {1, 2, 17, 20});
    EXPECT_GT(chunk_storage(values.get(), 0), 4u * 3 * 8);  // random bytes do not compress
}

// A failed append (here: the dataset cannot be extended) changes nothing in
// memory; the next append with the right dataset writes all rows.
TEST_F(ChunkAppenderTest, failed_append_leaves_the_appender_unchanged)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Dataset values = make_dataset(file.get(), "values", values_spec());
    auto out = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_TRUE(out.ok());
    const auto data = distinct_doubles(size_t{12} * 3);
    ChunkCodec codec(1);
    ASSERT_TRUE(out->append(values.get(), data.data(), 5, codec).ok());
    {
        ErrorSilencer quiet;
        auto r = out->append(H5I_INVALID_HID, data.data() + size_t{5} * 3, 2, codec);
        EXPECT_FALSE(r.ok());
        H5Eclear2(H5E_DEFAULT);
    }
    EXPECT_EQ(out->rows(), 5u);
    append_in_pieces(values.get(), H5T_NATIVE_DOUBLE, *out, codec, data, 3, {2, 5}, 5);
}

// 5. attach() refuses what it cannot write chunk by chunk.
TEST_F(ChunkAppenderTest, attach_refuses_unsupported_layouts_and_pipelines)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    struct Case {
        const char *name;
        Spec spec;
        hid_t mem_type;
    };
    Spec contiguous = values_spec(Filters::none);
    contiguous.contiguous = true;
    Spec contiguous_1d = time_spec(Filters::none);
    contiguous_1d.contiguous = true;
    Spec narrow_chunk = values_spec();
    narrow_chunk.chunk_width = 2;  // rows of 3
    Spec narrow_unfiltered = values_spec(Filters::none);
    narrow_unfiltered.chunk_width = 1;
    // Rows are written as the bytes of their memory type: a dataset of
    // another type would read back garbage.
    Spec big_endian = values_spec();
    big_endian.file_type = H5T_IEEE_F64BE;
    Spec float32 = values_spec();
    float32.file_type = H5T_IEEE_F32LE;
    float32.nan_fill = false;
    const std::vector<Case> cases{
        {"contiguous", contiguous, H5T_NATIVE_DOUBLE},
        {"contiguous_1d", contiguous_1d, H5T_NATIVE_INT64},
        {"deflate_only", values_spec(Filters::deflate_only), H5T_NATIVE_DOUBLE},
        {"deflate_only_1d", time_spec(Filters::deflate_only), H5T_NATIVE_INT64},
        {"narrow_chunk", narrow_chunk, H5T_NATIVE_DOUBLE},
        {"narrow_unfiltered", narrow_unfiltered, H5T_NATIVE_DOUBLE},
        {"shuffle_only", values_spec(Filters::shuffle_only), H5T_NATIVE_DOUBLE},
        {"deflate_then_shuffle", values_spec(Filters::deflate_shuffle), H5T_NATIVE_DOUBLE},
        {"shuffle_deflate_fletcher32", values_spec(Filters::shuffle_deflate_fletcher32), H5T_NATIVE_DOUBLE},
        {"big_endian_values", big_endian, H5T_NATIVE_DOUBLE},
        {"float32_values", float32, H5T_NATIVE_DOUBLE},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.name);
        Dataset ds = make_dataset(file.get(), c.name, c.spec);
        ASSERT_TRUE(ds.valid());
        ErrorSilencer quiet;
        const uint64_t rows = c.spec.contiguous ? 3 : 0;
        auto out = ChunkAppender::attach(ds.get(), c.mem_type, rows);
        ASSERT_FALSE(out.ok());
        EXPECT_EQ(out.error().code(), Errc::unsupported) << out.error().message();
    }

    // A 3-D dataset.
    const std::array<hsize_t, 3> dims{0, 2, 2}, max_dims{H5S_UNLIMITED, 2, 2}, chunk{4, 2, 2};
    Dataspace space{H5Screate_simple(3, dims.data(), max_dims.data())};
    PropList dcpl{H5Pcreate(H5P_DATASET_CREATE)};
    H5Pset_chunk(dcpl.get(), 3, chunk.data());
    Dataset cube{H5Dcreate2(file.get(), "cube", H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)};
    ASSERT_TRUE(cube.valid());
    ErrorSilencer quiet;
    auto out = ChunkAppender::attach(cube.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error().code(), Errc::unsupported) << out.error().message();
}

// Rows a later extension uncovers in the last chunk read as the fill value
// (NaN), as after HDF5's own writes, not as padding.
TEST_F(ChunkAppenderTest, rows_uncovered_by_a_later_extension_read_as_the_fill_value)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Dataset ds = make_dataset(file.get(), "values", values_spec());
    ASSERT_TRUE(ds.valid());
    auto out = ChunkAppender::attach(ds.get(), H5T_NATIVE_DOUBLE, 0);
    ASSERT_TRUE(out.ok()) << out.error().message();
    const auto data = distinct_doubles(size_t{6} * 3);
    ChunkCodec codec(1);
    ASSERT_TRUE(out->append(ds.get(), data.data(), 6, codec).ok());
    const std::array<hsize_t, 2> bigger{8, 3};
    ASSERT_GE(H5Dset_extent(ds.get(), bigger.data()), 0);
    auto bytes = read_all(ds.get(), H5T_NATIVE_DOUBLE);
    ASSERT_EQ(bytes.size(), size_t{8} * 3 * sizeof(double));
    EXPECT_EQ(std::memcmp(bytes.data(), data.data(), data.size() * 8), 0);
    for (size_t i = size_t{6} * 3; i < size_t{8} * 3; ++i) {
        double v = 0;
        std::memcpy(&v, bytes.data() + i * sizeof(double), sizeof v);
        EXPECT_TRUE(std::isnan(v)) << "element " << i << " is " << v;
    }
}

// 6. shuffle_bytes: HDF5's shuffle, byte b of element e to b * n + e.
TEST(ShuffleBytesTest, known_input_with_trailing_bytes)
{
    std::array<unsigned char, 14> in{};
    std::iota(in.begin(), in.end(), static_cast<unsigned char>(0));
    std::array<unsigned char, 14> out{};
    out.fill(0xee);
    shuffle_bytes(in.data(), out.data(), in.size(), 4);
    const std::array<unsigned char, 14> want{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 13};
    EXPECT_EQ(out, want);
}

TEST(ShuffleBytesTest, eight_byte_elements)
{
    std::array<unsigned char, 16> in{};
    std::iota(in.begin(), in.end(), static_cast<unsigned char>(0x10));
    std::array<unsigned char, 16> out{};
    shuffle_bytes(in.data(), out.data(), in.size(), 8);
    const std::array<unsigned char, 16> want{0x10, 0x18, 0x11, 0x19, 0x12, 0x1a, 0x13, 0x1b,
                                             0x14, 0x1c, 0x15, 0x1d, 0x16, 0x1e, 0x17, 0x1f};
    EXPECT_EQ(out, want);
}

TEST(ShuffleBytesTest, elem_size_one_and_short_inputs_copy)
{
    const std::array<unsigned char, 7> in{9, 8, 7, 6, 5, 4, 3};
    std::array<unsigned char, 7> out{};
    shuffle_bytes(in.data(), out.data(), in.size(), 1);
    EXPECT_EQ(out, in);
    out.fill(0);
    shuffle_bytes(in.data(), out.data(), in.size(), 8);  // less than one element
    EXPECT_EQ(out, in);
    out.fill(0);
    shuffle_bytes(in.data(), out.data(), 0, 4);  // nothing
    EXPECT_EQ(out, (std::array<unsigned char, 7>{}));
}

// The same bytes as HDF5's own shuffle filter: a shuffle-only dataset written
// with H5Dwrite, its stored chunks read raw with H5Dread_chunk.
TEST_F(ChunkAppenderTest, shuffle_bytes_matches_hdf5s_shuffle_filter)
{
    File file = create_file(file_path());
    ASSERT_TRUE(file.valid());
    Spec s = values_spec(Filters::shuffle_only);
    s.chunk_rows = 5;
    s.contiguous = false;
    Dataset ds = make_dataset(file.get(), "shuffled", s);
    const auto data = distinct_doubles(size_t{10} * 3);
    const std::array<hsize_t, 2> dims{10, 3};
    ASSERT_GE(H5Dset_extent(ds.get(), dims.data()), 0);
    ASSERT_GE(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
    ASSERT_GE(H5Dflush(ds.get()), 0);
    for (hsize_t row : {0, 5}) {
        const std::array<hsize_t, 2> offset{row, 0};
        std::vector<unsigned char> stored(size_t{5} * 3 * 8);
        uint32_t mask = 0xffff;
        ASSERT_GE(H5Dread_chunk(ds.get(), H5P_DEFAULT, offset.data(), &mask, stored.data()), 0);
        EXPECT_EQ(mask, 0u);
        std::vector<unsigned char> ours(stored.size());
        shuffle_bytes(reinterpret_cast<const unsigned char *>(data.data() + row * 3), ours.data(), ours.size(), 8);
        EXPECT_EQ(ours, stored) << "chunk at row " << row;
    }
}

// 7. h5py reads what the appender wrote (also after a reattach).
TEST_F(ChunkAppenderTest, h5py_reads_the_appended_rows)
{
    auto run = [](const std::string &command) {
        int status = std::system(command.c_str());
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    if (!std::filesystem::exists("/usr/bin/python3") || run("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0)
        GTEST_SKIP() << "h5py is not installed for /usr/bin/python3 (apt install python3-h5py)";

    const size_t rows = 23;
    const auto vdata = distinct_doubles(rows * 3);
    const auto tdata = distinct_times(rows);
    {
        File file = create_file(file_path());
        ASSERT_TRUE(file.valid());
        Dataset values = make_dataset(file.get(), "values", values_spec());
        Dataset time = make_dataset(file.get(), "time", time_spec());
        Dataset raw = make_dataset(file.get(), "raw", values_spec(Filters::none));
        auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 0);
        auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 0);
        auto rout = ChunkAppender::attach(raw.get(), H5T_NATIVE_DOUBLE, 0);
        ASSERT_TRUE(vout.ok() && tout.ok() && rout.ok());
        ChunkCodec codec(1);
        size_t row = 0;
        for (size_t k : {1, 2, 3, 4, 4}) {
            ASSERT_TRUE(vout->append(values.get(), vdata.data() + row * 3, k, codec).ok());
            ASSERT_TRUE(tout->append(time.get(), tdata.data() + row, k, codec).ok());
            ASSERT_TRUE(rout->append(raw.get(), vdata.data() + row * 3, k, codec).ok());
            row += k;
        }
        ASSERT_EQ(vout->rows(), 14u);
    }
    {
        // Reattach at 14 rows (a 2-row tail with chunks of 4) and append 9 more.
        File file = open_file(file_path());
        ASSERT_TRUE(file.valid());
        Dataset values = open_dataset(file.get(), "values");
        Dataset time = open_dataset(file.get(), "time");
        Dataset raw = open_dataset(file.get(), "raw");
        auto vout = ChunkAppender::attach(values.get(), H5T_NATIVE_DOUBLE, 14);
        auto tout = ChunkAppender::attach(time.get(), H5T_NATIVE_INT64, 14);
        auto rout = ChunkAppender::attach(raw.get(), H5T_NATIVE_DOUBLE, 14);
        ASSERT_TRUE(vout.ok() && tout.ok() && rout.ok());
        ChunkCodec codec(0);
        ASSERT_TRUE(vout->append(values.get(), vdata.data() + size_t{14} * 3, 9, codec).ok());
        ASSERT_TRUE(tout->append(time.get(), tdata.data() + 14, 9, codec).ok());
        ASSERT_TRUE(rout->append(raw.get(), vdata.data() + size_t{14} * 3, 9, codec).ok());
    }
    auto write_bin = [&](const char *name, const void *p, size_t n) {
        std::ofstream f(m_tree.path(name), std::ios::binary);
        f.write(static_cast<const char *>(p), static_cast<std::streamsize>(n));
        ASSERT_TRUE(f.good());
    };
    write_bin("values.bin", vdata.data(), vdata.size() * 8);
    write_bin("time.bin", tdata.data(), tdata.size() * 8);
    m_tree.write("check.py", R"PY(
import sys
import h5py, numpy as np

path, values_bin, time_bin = sys.argv[1:4]
with h5py.File(path, "r") as f:
    v, t, r = f["values"], f["time"], f["raw"]
    assert v.shape == (23, 3) and v.dtype == np.dtype("<f8"), (v.shape, v.dtype)
    assert t.shape == (23,) and t.dtype == np.dtype("<i8"), (t.shape, t.dtype)
    assert v.chunks == (4, 3) and t.chunks == (4,), (v.chunks, t.chunks)
    assert v.compression == "gzip" and v.shuffle, (v.compression, v.shuffle)
    assert t.compression == "gzip" and t.shuffle, (t.compression, t.shuffle)
    assert r.compression is None and not r.shuffle, (r.compression, r.shuffle)
    want_v = open(values_bin, "rb").read()
    want_t = open(time_bin, "rb").read()
    assert v[:].tobytes() == want_v, "values differ"
    assert r[:].tobytes() == want_v, "raw values differ"
    assert t[:].tobytes() == want_t, "time differs"
    # Row by row too (a partial read through the chunk cache).
    for i in range(23):
        assert v[i].tobytes() == want_v[i * 24:(i + 1) * 24], i
    assert t[0] == np.frombuffer(want_t[:8], "<i8")[0]
    assert np.isnan(v[0, 0]) and v[20, 1] == np.frombuffer(want_v, "<f8")[61]
print("ok")
)PY");
    std::ostringstream cmd;
    cmd << "/usr/bin/python3 '" << m_tree.path("check.py").string() << "' '" << file_path().string() << "' '"
        << m_tree.path("values.bin").string() << "' '" << m_tree.path("time.bin").string() << "'";
    EXPECT_EQ(run(cmd.str()), 0);
}

}  // namespace
