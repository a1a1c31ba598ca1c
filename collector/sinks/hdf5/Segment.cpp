#include "collector/sinks/hdf5/Segment.hpp"

#include "collector/sinks/hdf5/Hdf5Io.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace colmet::collector::hdf5 {

struct Segment::Datasets {
    Dataset time;
    Dataset values;
};

namespace {

// Chunks are small on purpose: every flush rewrites (and recompresses) the
// last, partly filled chunk of each dataset from memory, so its cost grows
// with the chunk size, while rows arrive a few at a time (one per sampling
// period).
constexpr hsize_t k_chunk_target_bytes = hsize_t{8} * 1024;
constexpr hsize_t k_min_chunk_rows = 32;
constexpr hsize_t k_max_chunk_rows = 4096;
constexpr hsize_t k_time_chunk_rows = 1024;  // 8 KiB of int64

hsize_t chunk_rows_for(size_t n_metrics)
{
    hsize_t rows = k_chunk_target_bytes / (sizeof(double) * std::max<size_t>(n_metrics, 1));
    return std::clamp(rows, k_min_chunk_rows, k_max_chunk_rows);
}

PropList create_plist(int rank, const hsize_t *chunk, int level)
{
    PropList dcpl{H5Pcreate(H5P_DATASET_CREATE)};
    H5Pset_chunk(dcpl.get(), rank, chunk);
    if (level > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        H5Pset_shuffle(dcpl.get());
        H5Pset_deflate(dcpl.get(), static_cast<unsigned>(std::min(level, 9)));
    }
    return dcpl;
}

const char *kind_name(wire::MetricKind kind) { return kind == wire::MetricKind::counter ? "counter" : "gauge"; }

size_t string_heap(const std::string &s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// Bytes of descriptors in memory beyond sizeof(MetricDescriptor) each: their
// strings on the heap (bounded by the bytes they took on the wire).
size_t descriptor_bytes(const wire::BackendBlock &block)
{
    size_t bytes = block.metrics.size() * (sizeof(wire::MetricDescriptor) + 32);
    if (block.metrics_wire)
        return bytes + 2 * block.metrics_wire->size();
    for (const auto &m : block.metrics)
        bytes += m.name.size() + m.unit.size() + 2;
    return bytes;
}

}  // namespace

Segment Segment::make(const wire::BackendBlock &block, int64_t started_ns)
{
    Segment seg;
    seg.m_metrics = block.metrics;
    seg.m_metrics_wire = block.metrics_wire;
    seg.m_started_ns = started_ns;
    seg.m_values = RowBuffer(sizeof(double) * std::max<size_t>(block.metrics.size(), 1));
    return seg;
}

Result<void> Segment::create(hid_t backend_group, const std::string &name, const SegmentOptions &options)
{
    if (m_metrics.empty())
        return Error::invalid("a segment needs at least one metric");
    Group group{H5Gcreate2(backend_group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)};
    if (!group)
        return h5_error("create group " + name);
    std::vector<std::string> names, units, kinds;
    for (const auto &m : m_metrics) {
        names.push_back(m.name);
        units.push_back(m.unit);
        kinds.emplace_back(kind_name(m.kind));
    }
    for (const auto &r :
         {write_strs_attr(group.get(), "names", names), write_strs_attr(group.get(), "units", units),
          write_strs_attr(group.get(), "kinds", kinds), write_i64_attr(group.get(), "started_ns", m_started_ns)})
        if (!r)
            return r.error();

    const hsize_t n = m_metrics.size();
    const hsize_t chunk_rows = chunk_rows_for(m_metrics.size());
    const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    Dataspace time_space{H5Screate_simple(1, &zero, &unlimited)};
    PropList time_dcpl = create_plist(1, &k_time_chunk_rows, options.compression_level);
    Dataset time{
        H5Dcreate2(group.get(), "time", H5T_STD_I64LE, time_space.get(), H5P_DEFAULT, time_dcpl.get(), H5P_DEFAULT)};
    if (!time)
        return h5_error("create dataset " + name + "/time");
    if (auto r = write_str_attr(time.get(), "unit", "ns since 1970-01-01 UTC"); !r)
        return r.error();

    const std::array<hsize_t, 2> dims{0, n}, max_dims{H5S_UNLIMITED, n}, chunk{chunk_rows, n};
    Dataspace value_space{H5Screate_simple(2, dims.data(), max_dims.data())};
    PropList value_dcpl = create_plist(2, chunk.data(), options.compression_level);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    H5Pset_fill_value(value_dcpl.get(), H5T_NATIVE_DOUBLE, &nan);
    Dataset values{H5Dcreate2(group.get(), "values", H5T_IEEE_F64LE, value_space.get(), H5P_DEFAULT, value_dcpl.get(),
                              H5P_DEFAULT)};
    if (!values)
        return h5_error("create dataset " + name + "/values");
    m_group = std::move(group);
    Datasets ds{std::move(time), std::move(values)};
    if (auto r = attach(ds, 0); !r)
        return r.error().with_context(name);
    m_name = name;
    return ok();
}

void Segment::adopt(Segment &&existing)
{
    m_name = std::move(existing.m_name);
    m_group = std::move(existing.m_group);
    m_rows_on_disk = existing.m_rows_on_disk;
    m_time_out = std::move(existing.m_time_out);
    m_values_out = std::move(existing.m_values_out);
}

Result<void> Segment::reopen_group(hid_t backend_group)
{
    auto group = open_group(backend_group, m_name);
    if (!group)
        return group.error();
    m_group = std::move(*group);
    return ok();
}

Result<void> Segment::attach(const Datasets &ds, uint64_t rows)
{
    auto time_out = ChunkAppender::attach(ds.time.get(), H5T_NATIVE_INT64, rows);
    if (!time_out)
        return time_out.error().with_context("time");
    auto values_out = ChunkAppender::attach(ds.values.get(), H5T_NATIVE_DOUBLE, rows);
    if (!values_out)
        return values_out.error().with_context("values");
    m_time_out.emplace(std::move(*time_out));
    m_values_out.emplace(std::move(*values_out));
    m_rows_on_disk = rows;
    return ok();
}

namespace {

hsize_t chunk_rows_of(hid_t dataset)
{
    PropList dcpl{H5Dget_create_plist(dataset)};
    std::array<hsize_t, 2> chunk{};
    if (!dcpl || H5Pget_chunk(dcpl.get(), 2, chunk.data()) < 1)
        return 1;
    return std::max<hsize_t>(chunk[0], 1);
}

}  // namespace

Result<Segment> Segment::open(hid_t backend_group, const std::string &name, uint64_t *lost_rows)
{
    *lost_rows = 0;
    auto group = open_group(backend_group, name);
    if (!group)
        return group.error();
    auto names = read_strs_attr(group->get(), "names");
    auto units = read_strs_attr(group->get(), "units");
    auto kinds = read_strs_attr(group->get(), "kinds");
    if (!names || !units || !kinds)
        return Error::invalid(name + ": missing names/units/kinds");
    if (names->size() != units->size() || names->size() != kinds->size() || names->empty())
        return Error::invalid(name + ": names/units/kinds differ in length");
    Segment seg;
    for (size_t i = 0; i < names->size(); ++i) {
        wire::MetricDescriptor m{(*names)[i], (*units)[i], wire::MetricKind::gauge};
        if ((*kinds)[i] == "counter")
            m.kind = wire::MetricKind::counter;
        else if ((*kinds)[i] != "gauge")
            return Error::invalid(name + ": unknown kind " + (*kinds)[i]);
        seg.m_metrics.push_back(std::move(m));
    }
    seg.m_group = std::move(*group);
    seg.m_values = RowBuffer(sizeof(double) * seg.m_metrics.size());
    auto ds = seg.open_datasets();
    if (!ds)
        return ds.error();
    auto time_rows = dataset_rows(ds->time.get());
    auto value_rows = dataset_rows(ds->values.get());
    if (!time_rows || !value_rows || *time_rows != *value_rows)
        return Error::invalid(name + ": time and values have different lengths");
    Dataspace space{H5Dget_space(ds->values.get())};
    std::array<hsize_t, 2> dims{};
    if (H5Sget_simple_extent_ndims(space.get()) != 2 ||
        H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0 || dims[1] != seg.m_metrics.size())
        return Error::invalid(name + ": values do not have one column per name");
    uint64_t rows = *time_rows;
    for (int attempt = 0;; ++attempt) {
        auto time_out = ChunkAppender::attach(ds->time.get(), H5T_NATIVE_INT64, rows);
        auto values_out = time_out ? ChunkAppender::attach(ds->values.get(), H5T_NATIVE_DOUBLE, rows)
                                   : Result<ChunkAppender>(time_out.error());
        if (time_out && values_out) {
            seg.m_time_out.emplace(std::move(*time_out));
            seg.m_values_out.emplace(std::move(*values_out));
            seg.m_rows_on_disk = rows;
            break;
        }
        const Error &e = time_out ? values_out.error() : time_out.error();
        if (e.code() != Errc::parse || attempt == 2)
            return e.with_context(name + (time_out ? "/values" : "/time"));
        // Cut both datasets where the unreadable chunk starts.
        const hsize_t keep = rows - rows % chunk_rows_of(time_out ? ds->values.get() : ds->time.get());
        const std::array<hsize_t, 2> value_dims{keep, dims[1]};
        if (H5Dset_extent(ds->time.get(), &keep) < 0 || H5Dset_extent(ds->values.get(), value_dims.data()) < 0)
            return h5_error("cut " + name + " to " + std::to_string(keep) + " rows");
        *lost_rows += rows - keep;
        rows = keep;
    }
    seg.m_name = name;
    return seg;
}

Result<Segment::Datasets> Segment::open_datasets() const
{
    Datasets ds{Dataset{H5Dopen2(m_group.get(), "time", H5P_DEFAULT)},
                Dataset{H5Dopen2(m_group.get(), "values", H5P_DEFAULT)}};
    if (!ds.time || !ds.values)
        return h5_error("open datasets");
    return ds;
}

bool Segment::matches(const wire::BackendBlock &block)
{
    if (block.metrics_wire) {
        // The decoder keeps one pointer while the bytes do not change: equal
        // pointers are the common case and cost no read of the bytes.
        if (block.metrics_wire == m_metrics_wire)
            return true;
        if (m_metrics_wire && *block.metrics_wire == *m_metrics_wire) {
            m_metrics_wire = block.metrics_wire;
            return true;
        }
    }
    if (block.metrics != m_metrics)
        return false;
    m_metrics_wire = block.metrics_wire;
    return true;
}

void Segment::append(int64_t time_ns, const std::vector<double> &values)
{
    std::memcpy(m_times.append(), &time_ns, sizeof time_ns);
    const size_t n = m_metrics.size();
    const size_t copied = std::min(n, values.size());
    unsigned char *row = m_values.append();
    if (copied > 0)
        std::memcpy(row, values.data(), copied * sizeof(double));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (size_t i = copied; i < n; ++i)
        std::memcpy(row + i * sizeof(double), &nan, sizeof nan);
}

void Segment::note_status(const std::string &status)
{
    if (status.empty() || status == m_status)
        return;
    m_status = status;
    m_status_dirty = true;
}

Result<size_t> Segment::flush(ChunkCodec &codec, size_t *dropped)
{
    *dropped = 0;
    const size_t k = m_times.rows();
    if (k == 0)
        return size_t{0};
    auto ds = open_datasets();
    auto copy_from = [](const RowBuffer &buffer) {
        return [&buffer](size_t first, size_t count, unsigned char *dst) { buffer.copy(first, count, dst); };
    };
    Result<void> written = ds ? m_time_out->append(ds->time.get(), copy_from(m_times), k, codec) : ds.error();
    if (written)
        written = m_values_out->append(ds->values.get(), copy_from(m_values), k, codec);
    m_times.clear();
    m_values.clear();
    if (written) {
        // Closing releases the datasets' metadata to the file's cache.
        if (!ds->values.reset() || !ds->time.reset())
            written = h5_error("close datasets");
    }
    if (!written) {
        // No rollback: after an HDF5 error the file is closed without a
        // further write (JobWriter::abandon) and opened again later.
        *dropped = k;
        return written.error().with_context("write " + std::to_string(k) + " rows");
    }
    if (m_status_dirty) {
        // Best effort: a status that cannot be written does not lose rows.
        if (write_str_attr(m_group.get(), "last_status", m_status))
            m_status_dirty = false;
        H5Eclear2(H5E_DEFAULT);
    }
    m_rows_on_disk += k;
    return k;
}

size_t Segment::drop_pending()
{
    const size_t k = m_times.rows();
    m_times.clear();
    m_values.clear();
    return k;
}

size_t Segment::memory_bytes() const
{
    size_t bytes = sizeof(Segment) + string_heap(m_name) + string_heap(m_status);
    bytes += m_metrics.capacity() * sizeof(wire::MetricDescriptor);
    for (const auto &m : m_metrics)
        bytes += string_heap(m.name) + string_heap(m.unit);
    bytes += m_times.memory_bytes() + m_values.memory_bytes();
    if (m_time_out)
        bytes += m_time_out->memory_bytes();
    if (m_values_out)
        bytes += m_values_out->memory_bytes();
    return bytes;
}

size_t Segment::append_bound(const wire::BackendBlock &block, bool new_segment)
{
    size_t bytes = RowBuffer::growth_bound(sizeof(int64_t)) +
                   RowBuffer::growth_bound(sizeof(double) * std::max<size_t>(block.metrics.size(), 1)) +
                   block.status.size() + 1;
    if (new_segment)
        bytes += sizeof(Segment) + descriptor_bytes(block);
    return bytes;
}

}  // namespace colmet::collector::hdf5
