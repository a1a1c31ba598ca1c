// One open job file: the HDF5 file, its /hosts/<host>/<backend> groups and
// the current segment of every backend, with their row buffers. Between two
// flush() calls the only HDF5 calls are the creation of groups, segments and
// datasets, each followed at once by H5Fflush, so a SIGKILL at any point
// outside flush() leaves the file as of the last flush.
#pragma once

#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/sinks/hdf5/JobAggregate.hpp"
#include "collector/sinks/hdf5/Segment.hpp"
#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace colmet::collector::hdf5 {

inline constexpr int32_t k_layout_version = 1;

// Counters a JobFile adds to; the sink collects them into its stats.
struct IoCounters {
    uint64_t rows_written = 0;
    uint64_t write_batches = 0;  // H5Dwrite batches (one per segment per flush)
    uint64_t rows_dropped = 0;   // buffered rows lost to a failed write
    uint64_t write_errors = 0;
    uint64_t flushes = 0;        // H5Fflush calls after writing rows
};

class JobFile {
public:
    struct Opened;

    // Open <path> for appending, or create it. A path that exists but is not
    // a readable colmet HDF5 file (or is not a regular file) is renamed to
    // <path>.corrupt-<ns> and a new file is created. A colmet file of another
    // job is an error and is left alone.
    // codec encodes the chunks of every flush; it must outlive the JobFile.
    static Result<Opened> open(const std::filesystem::path &path, const std::string &job_id,
                               const SegmentOptions &options, ChunkCodec &codec);

    hid_t id() const { return m_file.get(); }

    // Buffer the rows of a message (one per backend with metrics). Creates
    // the host, backend and segment groups on first use; a backend whose
    // descriptors differ from its current segment's starts a new segment.
    Result<void> append(const wire::Message &msg);

    // The most rows any segment holds in memory.
    size_t max_pending_rows() const { return m_max_pending; }

    // Write every buffered row (one H5Dset_extent + H5Dwrite per dataset of
    // each segment), the attributes of dirty hosts, then H5Fflush.
    Result<void> flush(HostMap &hosts, IoCounters &counters);

    // Write /summary, then H5Fflush.
    Result<void> write_summary(const JobSummary &summary);

    // Close every object and the file; an error when H5Fclose failed.
    Result<void> close();

private:
    struct BackendNode {
        Group group;
        bool probed = false;  // existing segments looked up in this session
        size_t segments = 0;
        std::optional<Segment> current;
    };
    struct HostNode {
        Group group;
        std::map<std::string, BackendNode> backends;  // by original backend name
        // backends[i] of the last message: (name, node) into the map above,
        // so the steady stream of messages finds its nodes without lookups.
        std::vector<std::pair<const std::string *, BackendNode *>> by_position;
    };

    JobFile(File file, Group hosts, SegmentOptions options, ChunkCodec &codec);

    Result<HostNode *> host_node(const std::string &hostname);
    Result<BackendNode *> backend_node(HostNode &host, const wire::BackendBlock &block, size_t position);
    Result<Segment *> segment_for(BackendNode &backend, const wire::BackendBlock &block, int64_t time_ns);
    Result<void> flush_structure();

    File m_file;  // declared first: closed after every object below
    Group m_hosts;
    std::map<std::string, HostNode> m_host_nodes;  // by original host name
    std::vector<Segment> m_retired;  // replaced segments whose rows are not yet written
    SegmentOptions m_options;
    ChunkCodec *m_codec;
    bool m_structure_changed = false;
    size_t m_max_pending = 0;  // most rows buffered in one segment since the last flush
};

struct JobFile::Opened {
    std::unique_ptr<JobFile> file;
    bool existed = false;                    // an existing file was reopened
    std::filesystem::path quarantined;       // set when a broken file was renamed
};

} // namespace colmet::collector::hdf5
