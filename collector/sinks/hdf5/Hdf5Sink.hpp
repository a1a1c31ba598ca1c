// The HDF5 sink of colmet-collector: one file per job, <dir>/<name>.h5 (see
// job_file(dir, id, JobFile::data)), laid out as docs/hdf5-layout.md describes.
//
//   auto sink = make_hdf5_sink({.dir = "/var/lib/colmet"});
//   if (!sink) ...;             // the directory could not be created
//   (*sink)->consume(msg, delivery);   // from the collector loop
//   (*sink)->tick(monotonic_ns());     // at least once a second
//   (*sink)->close_all();              // at exit (the destructor does it too)
//
// consume() only buffers rows in memory; rows reach the file (with the
// groups and datasets they need) when a segment holds batch_rows rows, every
// flush_interval_s (tick) and at job end. A job is "open" while the sink
// holds its rows and structure in memory; its HDF5 file is open only while
// in use (at most max_open_files, and as the memory budget allows), so an
// open job costs tens of KiB, an open HDF5 file about 0.8 MiB more.
//
// The sink keeps an estimate of its memory under memory_budget_bytes: before
// it would be exceeded it closes the least recently used HDF5 files, writes
// the largest buffers, then closes the least recently active jobs. Writing
// pauses while the output file system has less than min_free_bytes free:
// rows then stay in memory up to the budget, beyond which they are dropped
// and counted (stats, and each host's rows_dropped attribute). After an HDF5
// error a file is closed without further writes and opened anew later.
//
// Errors never leave consume/tick/close_all: they are logged (rate-limited)
// and counted in stats(). Not thread-safe: one thread calls it, as the
// collector does.
#pragma once

#include "collector/Sink.hpp"
#include "collector/flags/WasteFlags.hpp"
#include "collector/sinks/hdf5/FileAccess.hpp"
#include "collector/sinks/hdf5/NodeSharing.hpp"
#include "collector/sinks/hdf5/SummaryStore.hpp"
#include "common/log.hpp"
#include "common/names.hpp"
#include "common/result.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace colmet::collector {

namespace hdf5 {
class ChunkCodec;
class DiskSpace;
class JobWriter;
struct JobState;
}  // namespace hdf5

struct Hdf5Options {
    std::filesystem::path dir;    // output directory, created if missing
    int compression_level = 1;    // deflate level 0..9 (0 = no compression; see docs/performance.md)
    double flush_interval_s = 5;  // buffered rows reach the file at least this often
    size_t max_open_files = 256;  // HDF5 files open at most; least recently used ones are closed beyond this
    double idle_close_s = 300;    // close the file of a job silent for this long, then forget the job
    size_t batch_rows = 256;      // a segment holding this many rows is written at once
    uint64_t memory_budget_bytes = 256ULL << 20;  // the sink's memory estimate stays below this (at least 8 MiB)
    uint64_t min_free_bytes = 64ULL << 20;        // writing pauses below this much free space (0: never)
    // Who may read a job's file besides the collector's user and group
    // (FileAccess.hpp): the job's user by default.
    hdf5::FileOwner owner = hdf5::FileOwner::job_user;
    // This collector's name, recorded in every file it writes (root
    // attribute "collector"); a file that names another collector is left
    // alone and its messages dropped (files_foreign). Empty: no check.
    std::string writer;
    // The waste flags' thresholds (collector/flags/WasteFlags.hpp).
    flags::FlagRules flag_rules;
    // fsync() a job's file after each flush, before its rows are
    // acknowledged: they then survive a crash of the collector's machine,
    // not only of the collector (H5Fflush alone leaves them to the kernel).
    bool fsync = false;
    // How free space under dir is measured (tests); empty: statvfs.
    std::function<std::optional<uint64_t>(const std::filesystem::path &)> free_bytes_probe;
};

struct Hdf5SinkStats {
    uint64_t rows_written = 0;
    uint64_t files_opened = 0;  // HDF5 files created or opened
    uint64_t files_closed = 0;
    uint64_t write_errors = 0;   // failed HDF5 or file system operations
    uint64_t write_batches = 0;  // per-segment writes (one H5Dset_extent + H5Dwrite per dataset)
    uint64_t flushes = 0;        // H5Fflush after writing rows
    uint64_t rows_dropped = 0;   // rows lost: failed writes, a file that could not be opened, the budget while paused
    uint64_t messages_dropped = 0;    // messages not stored because their file could not be opened
    uint64_t duplicates_dropped = 0;  // messages whose seq the job's file already holds (resent, replayed)
    // Messages of acknowledged senders not stored now (out of order after a
    // loss, no room, no file): never acknowledged, so their senders resend.
    uint64_t messages_deferred = 0;
    uint64_t acks = 0;                    // acknowledgements handed out
    uint64_t files_quarantined = 0;       // unreadable files renamed to <name>.h5.corrupt-<ns>
    uint64_t files_foreign = 0;           // opens refused: the file is another collector's (Hdf5Options::writer)
    uint64_t files_abandoned = 0;         // files closed without further writes after an HDF5 error
    uint64_t tsdb_points_recorded = 0;    // points the time-series sink could not deliver, recorded in files
    uint64_t tsdb_points_unrecorded = 0;  // ... that could not be recorded (no file of the job, or it would not open)
    uint64_t summaries_written = 0;
    uint64_t summaries_incomplete = 0;   // written after idle_close_s of silence, some host's job_end missing
    uint64_t files_shared = 0;           // files the job's user was given read access to (ACL)
    uint64_t share_errors = 0;           // files that could not be shared (unknown user, no ACLs)
    uint64_t memory_estimate_bytes = 0;  // now: open files, jobs' rows and structure, per-job state
    uint64_t memory_peak_bytes = 0;      // highest memory_estimate_bytes so far
    uint64_t budget_evictions = 0;       // files closed, buffers written or jobs closed to keep the budget
    uint64_t write_pauses = 0;           // times writing paused for want of free space
    bool writing_paused = false;
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

    Hdf5SinkStats stats() const;
    std::string stats_text() const override;
    bool acknowledges() const override { return true; }
    void take_acks(std::vector<wire::Ack> &out) override;
    // Another sink's losses go into the job's file (tsdb_points_dropped of
    // the host, and the summary), opening it again if the job was closed.
    bool records_losses() const override { return true; }
    bool announces_ended_jobs() const override { return true; }
    void set_ended_job_listener(const EndedJobListener &listener) override { m_ended_job = listener; }
    void record_losses(const std::vector<SinkLoss> &losses, int64_t now_mono_ns) noexcept override;
    size_t open_files() const { return m_open_files; }  // HDF5 files open now
    size_t open_jobs() const;                           // jobs whose rows and structure are in memory
    const std::filesystem::path &dir() const { return m_options.dir; }

    // What the memory estimate counts for each open HDF5 file, and for the
    // allocator's overhead on the bytes the sink counts itself (measured:
    // docs/performance.md, "Memory").
    static constexpr size_t k_open_file_bytes = size_t{800} * 1024;
    static constexpr unsigned k_overhead_percent = 125;

private:
    using JobMap = std::unordered_map<std::string, std::unique_ptr<hdf5::JobState>>;

    void consume_message(const wire::Message &msg, const Delivery &delivery);
    hdf5::JobState *job_for(const std::string &job_id);
    void record_loss(const SinkLoss &loss, int64_t now_ns);
    bool open_job(hdf5::JobState &job, int64_t now_ns);
    bool attach(hdf5::JobState &job, int64_t now_ns);
    void note_reader(hdf5::JobState &job, const wire::Message &msg);
    void share_file(hdf5::JobState &job);
    void detach(hdf5::JobState &job);
    void fail_file(hdf5::JobState &job, int64_t now_ns);
    bool flush_job(hdf5::JobState &job, int64_t now_ns);
    // unended: written after the job's silence without every host's job end.
    bool write_summary_now(hdf5::JobState &job, int64_t now_ns, JobSummary *written = nullptr, bool unended = false);
    void announce(hdf5::JobState &job, JobSummary summary);
    static void note_restored_end(hdf5::JobState &job);
    void finish_job(hdf5::JobState &job, int64_t now_ns);
    void summarize_unfinished(hdf5::JobState &job, int64_t now_ns);
    bool close_job(hdf5::JobState &job, int64_t now_ns);
    void forget_file(hdf5::JobState &job);
    void drop_rows(hdf5::JobState &job, const wire::Message &msg);
    void emit_acks(hdf5::JobState &job);
    void record_overlap(const std::string &job_id, const std::string &host, const std::string &other);
    bool writable();
    void report(const std::string &job_id, const Error &error);

    // Memory (Hdf5SinkMemory.cpp).
    uint64_t estimate() const;
    bool make_room(size_t need, const hdf5::JobState *current, int64_t now_ns);
    void sync_file_bytes(hdf5::JobState &job);
    void sync_state_bytes(hdf5::JobState &job);
    void touch_file(hdf5::JobState &job);
    void note_peak();

    Hdf5Options m_options;
    std::unique_ptr<hdf5::ChunkCodec> m_codec;  // encodes every chunk the sink writes
    std::unique_ptr<hdf5::DiskSpace> m_space;
    JobMap m_jobs;                           // by original job id
    std::list<hdf5::JobState *> m_attached;  // jobs whose file is open, least recently used first
    size_t m_open_files = 0;
    uint64_t m_budget = 0;       // memory_budget_bytes less one open file (the one a flush may open)
    uint64_t m_file_bytes = 0;   // sum of the jobs' JobWriter::memory_bytes()
    uint64_t m_state_bytes = 0;  // sum of the jobs' state (hosts, overlaps, ...)
    bool m_making_room = false;
    hdf5::NodeSharing m_sharing;  // which jobs shared each host, for overlapping_jobs
    Hdf5SinkStats m_stats;
    std::vector<wire::Ack> m_acks;  // due, for take_acks()
    log::RateLimiter m_log_limit{10, std::chrono::seconds(60)};
    EndedJobListener m_ended_job;  // on-job-end: each job once, at its first complete (or silent) summary
};

// Create (if needed) and check the output directory, then the sink. The
// directory is stored canonical: every file path is checked to lie in it.
Result<std::unique_ptr<Hdf5Sink>> make_hdf5_sink(Hdf5Options options);

}  // namespace colmet::collector
