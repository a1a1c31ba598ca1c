// The HDF5 sink of colmet-collector: one file per job, <dir>/<name>.h5 (see
// job_file_path()), laid out as docs/hdf5-layout.md describes.
//
//   auto sink = make_hdf5_sink({.dir = "/var/lib/colmet"});
//   if (!sink) ...;             // the directory could not be created
//   (*sink)->consume(msg, delivery);   // from the collector loop
//   (*sink)->tick(monotonic_ns());     // at least once a second
//   (*sink)->close_all();              // at exit (the destructor does it too)
//
// consume() only buffers rows in memory (it creates groups and datasets the
// first time a host, backend or metric layout appears); rows reach the file
// when a segment holds batch_rows rows, every flush_interval_s (tick) and at
// job end. Errors never leave consume/tick/close_all: they are logged
// (rate-limited) and counted in stats(). Not thread-safe: one thread calls
// it, as the collector does.
#pragma once

#include "collector/Sink.hpp"
#include "collector/sinks/hdf5/JobSummary.hpp"
#include "collector/sinks/hdf5/NodeSharing.hpp"
#include "common/log.hpp"
#include "common/result.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

namespace colmet::collector {

namespace hdf5 {
class ChunkCodec;
class JobFile;
struct JobState;
} // namespace hdf5

struct Hdf5Options {
    std::filesystem::path dir;     // output directory, created if missing
    int compression_level = 1;     // deflate level 0..9 (0 = no compression; see docs/performance.md)
    double flush_interval_s = 5;   // buffered rows reach the file at least this often
    size_t max_open_files = 256;   // least recently used files are closed beyond this
    double idle_close_s = 300;     // close the file of a job silent for this long
    size_t batch_rows = 256;       // a segment holding this many rows is written at once
};

struct Hdf5SinkStats {
    uint64_t rows_written = 0;
    uint64_t files_opened = 0;     // created or reopened
    uint64_t files_closed = 0;
    uint64_t write_errors = 0;     // failed HDF5 or file system operations
    uint64_t write_batches = 0;    // per-segment writes (one H5Dset_extent + H5Dwrite per dataset)
    uint64_t flushes = 0;          // H5Fflush after writing rows
    uint64_t rows_dropped = 0;     // rows lost: failed writes, or a file that could not be opened
    uint64_t messages_dropped = 0; // messages not stored because their file could not be opened
    uint64_t files_quarantined = 0; // unreadable files renamed to <name>.h5.corrupt-<ns>
    uint64_t summaries_written = 0;
};

class Hdf5Sink final : public Sink {
public:
    // Prefer make_hdf5_sink(), which creates and checks the directory first.
    explicit Hdf5Sink(Hdf5Options options);
    ~Hdf5Sink() override;
    Hdf5Sink(const Hdf5Sink &) = delete;
    Hdf5Sink &operator=(const Hdf5Sink &) = delete;

    void consume(const wire::Message &msg, const Delivery &delivery) noexcept override;
    void tick(int64_t now_mono_ns) noexcept override;
    void flush_all(int64_t now_mono_ns) noexcept override;
    void close_all() noexcept override;

    Hdf5SinkStats stats() const { return m_stats; }
    size_t open_files() const { return m_open_files; }
    const std::filesystem::path &dir() const { return m_options.dir; }

private:
    using JobMap = std::unordered_map<std::string, std::unique_ptr<hdf5::JobState>>;

    void consume_message(const wire::Message &msg, const Delivery &delivery);
    bool ensure_open(hdf5::JobState &job, int64_t now_ns);
    void flush_job(hdf5::JobState &job, int64_t now_ns);
    void end_of_host(hdf5::JobState &job, int64_t now_ns);
    void close_job(hdf5::JobState &job);
    void close_least_recently_used();
    void record_overlap(const std::string &job_id, const std::string &host, const std::string &other, int64_t now_ns);
    void report(const std::string &job_id, const Error &error);

    Hdf5Options m_options;
    std::unique_ptr<hdf5::ChunkCodec> m_codec;  // encodes every chunk the sink writes
    JobMap m_jobs;  // by original job id
    size_t m_open_files = 0;
    hdf5::NodeSharing m_sharing;  // which jobs shared each host, for overlapping_jobs
    Hdf5SinkStats m_stats;
    log::RateLimiter m_log_limit{10, std::chrono::seconds(60)};
};

// Create (if needed) and check the output directory, then the sink. The
// directory is stored canonical: every file path is checked to lie in it.
Result<std::unique_ptr<Hdf5Sink>> make_hdf5_sink(Hdf5Options options);

} // namespace colmet::collector
