// One job's file as the sink holds it in memory: its /hosts/<host>/<backend>
// tree, the segments of every backend and their buffered rows. The HDF5
// file itself is open only while attached: append() never touches it (rows
// and new segments wait in memory), flush() creates what is new and writes
// the rows, and between flushes the file may be closed (detach()) to give
// its memory back (HDF5 holds about 0.8 MiB per open file) and opened again
// (attach()) for the next flush. Every HDF5 write happens in flush() and
// write_summary(), and each ends with H5Fflush, so a SIGKILL at any point
// outside them leaves the file as of the last flush.
//
// After an HDF5 error the file is not used again: abandon() closes it
// without writing anything more (HDF5's state after a failed write cannot be
// trusted), and the sink opens the file anew later.
#pragma once

#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/sinks/hdf5/Segment.hpp"
#include "collector/summary/HostAggregate.hpp"
#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace colmet::collector::hdf5 {

inline constexpr int32_t k_layout_version = 1;
// The root attribute naming the collector that writes the file.
inline constexpr const char *k_writer_attr = "collector";

// Counters a JobWriter adds to; the sink collects them into its stats.
struct IoCounters {
    uint64_t rows_written = 0;
    uint64_t write_batches = 0;  // H5Dwrite batches (one per segment per flush)
    uint64_t rows_dropped = 0;   // buffered rows lost to a failed write
    uint64_t write_errors = 0;
    uint64_t flushes = 0;  // H5Fflush calls after writing rows
};

class JobWriter {
public:
    struct Opened {
        bool existed = false;               // an existing file was reopened
        bool created = false;               // a new file was created
        std::filesystem::path quarantined;  // set when a broken file was renamed
    };

    // codec encodes the chunks of every flush; it must outlive the JobWriter.
    // writer names the collector (root attribute "collector"; empty: none):
    // a file another collector writes is left alone (Errc::conflict).
    JobWriter(std::filesystem::path path, std::string job_id, std::string writer, const SegmentOptions &options,
              ChunkCodec &codec);
    ~JobWriter();
    JobWriter(const JobWriter &) = delete;
    JobWriter &operator=(const JobWriter &) = delete;

    const std::filesystem::path &path() const { return m_path; }
    bool attached() const { return m_file.valid(); }
    hid_t id() const { return m_file.get(); }

    // Open the file. The first time: reopen <path> for appending, or create
    // it; a path that exists but is not a readable colmet HDF5 file (or is
    // not a regular file) is renamed to <path>.corrupt-<ns> and a new file
    // is created; a colmet file of another job is an error and is left
    // alone, and so is one another collector writes. Later: reopen it, an
    // error when it is no longer this job's file.
    Result<Opened> attach();
    // Close the file, keeping everything in memory. The file is flushed
    // first; when that fails the file is abandoned and the error returned.
    Result<void> detach();
    // fsync() the open file: what H5Fflush handed the kernel reaches the disk.
    Result<void> sync();
    // Close the file after an error without writing anything more to it.
    // Buffered rows stay (drop_pending() drops them).
    void abandon();

    // Buffer the rows of a message (one per backend with metrics), in memory
    // only. A backend whose descriptors differ from its current segment's
    // starts a new segment.
    void append(const wire::Message &msg);
    // The most append(msg) can add to memory_bytes().
    static size_t append_bound(const wire::Message &msg);

    // The most rows any segment holds in memory.
    size_t max_pending_rows() const { return m_max_pending; }
    uint64_t pending_rows() const { return m_pending_rows; }
    size_t pending_bytes() const { return m_pending_bytes; }
    // What this object holds in memory (structure, buffered rows, tails of
    // the last chunks), not counting the open file itself.
    size_t memory_bytes() const { return m_bytes; }

    // Write every buffered row (creating what is new: groups, segments), the
    // attributes of dirty hosts, then H5Fflush. The file must be attached.
    // Stops at the first error: the rows this flush wrote and the rows of the
    // failed segment count as dropped (also in their host's rows_dropped),
    // every host is marked dirty, and the caller must abandon the file and
    // forget this object (its view of the file is no longer the file's).
    Result<void> flush(HostMap &hosts, IoCounters &counters);

    // Write /summary, then H5Fflush. The file must be attached.
    Result<void> write_summary(const JobSummary &summary);
    // /flags while the job runs (hdf5::write_flags), then H5Fflush.
    Result<void> write_flags(const std::vector<JobFlag> &flags);

    // Forget every buffered row, adding them to their host's rows_dropped;
    // returns how many there were.
    uint64_t drop_pending(HostMap &hosts);

private:
    // write(file), then H5Fflush; `what` names it in the error of a closed file.
    Result<void> write_flushed(const char *what, const std::function<Result<void>(hid_t)> &write);
    struct BackendNode {
        Group group;
        wire::Scope scope = wire::Scope::job;
        bool probed = false;                  // existing segments counted in this session
        size_t segments = 0;                  // segment_<N> groups on disk
        std::optional<Segment> last_on_disk;  // probed: may continue the first new segment
        std::vector<Segment> retired;         // replaced segments with rows to write, oldest first
        std::optional<Segment> current;
    };
    struct HostNode {
        Group group;
        std::map<std::string, BackendNode> backends;  // by original backend name
        // backends[i] of the last message: (name, node) into the map above,
        // so the steady stream of messages finds its nodes without lookups.
        std::vector<std::pair<const std::string *, BackendNode *>> by_position;
    };

    BackendNode &backend_node(HostNode &host, const wire::BackendBlock &block, size_t position);
    Result<hid_t> host_group(const std::string &hostname, HostNode &host);
    Result<hid_t> backend_group(HostNode &host, const std::string &name, BackendNode &backend);
    Result<void> place_on_disk(BackendNode &backend, Segment &seg, HostAggregate &aggregate, IoCounters &counters);
    Result<void> flush_backend(HostNode &host, const std::string &name, BackendNode &backend, HostAggregate &aggregate,
                               uint64_t &rows, IoCounters &counters);
    void close_groups();
    void recount();

    std::filesystem::path m_path;
    std::string m_job_id;
    std::string m_writer;
    File m_file;  // declared before the groups: closed after every group below
    Group m_hosts;
    std::map<std::string, HostNode> m_host_nodes;  // by original host name
    SegmentOptions m_options;
    ChunkCodec *m_codec;
    bool m_opened_once = false;  // the file exists on disk as this job's
    size_t m_max_pending = 0;    // most rows buffered in one segment since the last flush
    uint64_t m_pending_rows = 0;
    size_t m_pending_bytes = 0;
    size_t m_bytes = 0;
};

}  // namespace colmet::collector::hdf5
