// One segment of one backend: the rows written while the backend's metric
// descriptors stayed the same. On disk: group segment_<N> with attributes
// names/units/kinds/started_ns and datasets time (int64, [rows]) and values
// (float64, [rows, n_metrics]). Rows are buffered in memory and written by
// flush() as whole chunks (ChunkAppender: H5Dset_extent + H5Dwrite_chunk,
// filtered by the sink's ChunkCodec).
//
// Only the segment's group stays open: the datasets are opened for the
// length of a flush. HDF5 walks every open dataset of the process at each
// H5Fflush, so keeping thousands of datasets open (hundreds of files) would
// make each flush cost grow with the number of open files.
#pragma once

#include "collector/sinks/hdf5/ChunkAppender.hpp"
#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace colmet::collector::hdf5 {

struct SegmentOptions {
    int compression_level = 1;  // deflate level of new datasets; 0 = no filters
};

class Segment {
public:
    // Create segment `name` in the backend group with these descriptors.
    static Result<Segment> create(hid_t backend_group, const std::string &name,
                                  const std::vector<wire::MetricDescriptor> &metrics, int64_t started_ns,
                                  const SegmentOptions &options);
    // Open an existing segment to append to it (reads its descriptors, row
    // count and the rows of its last, partial chunks). A segment whose time
    // and values row counts differ, whose attributes cannot be read, or
    // whose datasets are not stored as colmet stores them (chunks of whole
    // rows; shuffle + deflate or no filter) is returned as an error.
    static Result<Segment> open(hid_t backend_group, const std::string &name);

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
    size_t pending_rows() const { return m_times.size(); }
    uint64_t rows_on_disk() const { return m_rows_on_disk; }

    // Write the buffered rows. On success returns the number of rows written;
    // on failure the buffer is dropped (its size is in *dropped) and the
    // datasets are put back to their previous extent when possible.
    Result<size_t> flush(ChunkCodec &codec, size_t *dropped);

private:
    Segment() = default;

    struct Datasets;
    Result<Datasets> open_datasets() const;

    Result<void> attach(const Datasets &ds, uint64_t rows);

    Group m_group;
    std::vector<wire::MetricDescriptor> m_metrics;
    // msgpack bytes of m_metrics, as last seen in a decoded block (may be null)
    std::shared_ptr<const std::string> m_metrics_wire;
    uint64_t m_rows_on_disk = 0;
    std::optional<ChunkAppender> m_time_out;
    std::optional<ChunkAppender> m_values_out;
    std::vector<int64_t> m_times;
    std::vector<double> m_buffer;  // row-major [pending_rows, n_metrics]
    std::string m_status;          // last non-empty status seen
    bool m_status_dirty = false;   // not yet written
};

} // namespace colmet::collector::hdf5
