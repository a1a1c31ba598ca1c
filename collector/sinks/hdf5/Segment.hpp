// One segment of one backend: the rows written while the backend's metric
// descriptors stayed the same. On disk: group segment_<N> with attributes
// names/units/kinds/started_ns and datasets time (int64, [rows]) and values
// (float64, [rows, n_metrics]). Rows are buffered in memory (RowBuffer) and
// written by flush() as whole chunks (ChunkAppender: H5Dset_extent +
// H5Dwrite_chunk, filtered by the sink's ChunkCodec).
//
// A segment starts in memory only: make() needs no file. The first flush
// either creates it on disk (create()) or continues the last segment of an
// existing file with the same descriptors (adopt(), after open()). Between
// flushes the segment may hold its group open, or nothing at all
// (close_group(): the file is closed, the rows and the tail of the last
// chunk stay in memory).
//
// Datasets are opened for the length of a flush only: HDF5 walks every open
// dataset of the process at each H5Fflush, so keeping thousands of datasets
// open would make each flush cost grow with the number of open files.
#pragma once

#include "collector/sinks/hdf5/ChunkAppender.hpp"
#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/sinks/hdf5/RowBuffer.hpp"
#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace colmet::collector::hdf5 {

struct SegmentOptions {
    int compression_level = 1;  // deflate level of new datasets; 0 = no filters
};

class Segment {
public:
    // A segment in memory only, for the descriptors of `block`.
    static Segment make(const wire::BackendBlock &block, int64_t started_ns);
    // Open an existing segment to append to it (reads its descriptors, row
    // count and the rows of its last, partial chunks). A segment whose time
    // and values row counts differ, whose attributes cannot be read, or
    // whose datasets are not stored as colmet stores them (chunks of whole
    // rows; shuffle + deflate or no filter) is returned as an error. A last
    // chunk that cannot be read back (a write failed there: only the last
    // chunk of a dataset is ever rewritten) is cut off, with the rows after
    // it in the other dataset; *lost_rows receives how many rows went.
    static Result<Segment> open(hid_t backend_group, const std::string &name, uint64_t *lost_rows);

    // Create this segment on disk as group `name` of the backend group.
    Result<void> create(hid_t backend_group, const std::string &name, const SegmentOptions &options);
    // Continue `existing` (from open(), same descriptors): take its place on
    // disk, keeping the rows buffered here.
    void adopt(Segment &&existing);
    // Reopen the group after the file was closed and opened again.
    Result<void> reopen_group(hid_t backend_group);
    void close_group() { m_group.reset(); }

    bool on_disk() const { return !m_name.empty(); }
    bool group_open() const { return m_group.valid(); }
    const std::vector<wire::MetricDescriptor> &metrics() const { return m_metrics; }

    // True when the block's rows belong in this segment (same descriptors).
    // Compares the descriptors' msgpack bytes first when the block has them
    // (a decoded block): equal bytes are equal descriptors.
    bool matches(const wire::BackendBlock &block);

    // Buffer one row; missing values (a short vector) are stored as NaN.
    void append(int64_t time_ns, const std::vector<double> &values);
    // Remember the backend's status text (why values are NaN, e.g.
    // "unsupported: cpu_cycles"); the last non-empty one is written by the
    // next flush as the segment's attribute last_status.
    void note_status(const std::string &status);
    size_t pending_rows() const { return m_times.rows(); }
    uint64_t rows_on_disk() const { return m_rows_on_disk; }

    // Write the buffered rows (the segment must be on disk, its group open).
    // Returns the number of rows written. On failure the buffer is dropped
    // (its size is in *dropped) and the file must not be used any more.
    Result<size_t> flush(ChunkCodec &codec, size_t *dropped);
    // Forget the buffered rows; returns how many there were.
    size_t drop_pending();

    // Bytes this segment holds in memory (descriptors, buffered rows, tails).
    size_t memory_bytes() const;
    // The part of memory_bytes() that append() changes (O(1)).
    size_t buffer_bytes() const { return m_times.memory_bytes() + m_values.memory_bytes() + m_status.capacity(); }
    // The most append() of this block can add to memory_bytes() (of a new
    // segment for it, when `new_segment`).
    static size_t append_bound(const wire::BackendBlock &block, bool new_segment);

private:
    Segment() = default;

    struct Datasets;
    Result<Datasets> open_datasets() const;
    Result<void> attach(const Datasets &ds, uint64_t rows);

    std::string m_name;  // segment_<N>; empty while in memory only
    Group m_group;
    std::vector<wire::MetricDescriptor> m_metrics;
    // msgpack bytes of m_metrics, as last seen in a decoded block (may be null)
    std::shared_ptr<const std::string> m_metrics_wire;
    int64_t m_started_ns = 0;
    uint64_t m_rows_on_disk = 0;
    std::optional<ChunkAppender> m_time_out;
    std::optional<ChunkAppender> m_values_out;
    RowBuffer m_times{sizeof(int64_t)};
    RowBuffer m_values{sizeof(double)};  // rows of n_metrics values
    std::string m_status;                // last non-empty status seen
    bool m_status_dirty = false;         // not yet written
};

}  // namespace colmet::collector::hdf5
