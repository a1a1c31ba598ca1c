#include "collector/sinks/hdf5/Hdf5Sink.hpp"

#include "collector/sinks/hdf5/ChunkCodec.hpp"
#include "collector/sinks/hdf5/DiskSpace.hpp"
#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/sinks/hdf5/Hdf5Io.hpp"
#include "collector/sinks/hdf5/JobState.hpp"
#include "common/clock.hpp"
#include "common/names.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace colmet::collector {

using hdf5::JobState;

namespace {

int64_t to_ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

constexpr int64_t k_min_retry_ns = 1'000'000'000;
constexpr int64_t k_max_retry_ns = 30'000'000'000;
constexpr uint64_t k_min_budget = 8ULL << 20;

bool any_dirty(const JobState &job)
{
    return std::any_of(job.hosts.begin(), job.hosts.end(), [](const auto &h) { return h.second.dirty; });
}

bool needs_flush(const JobState &job) { return job.file && (job.file->pending_rows() > 0 || any_dirty(job)); }

uint64_t rows_of(const wire::Message &msg)
{
    return static_cast<uint64_t>(
        std::count_if(msg.backends.begin(), msg.backends.end(), [](const auto &b) { return !b.metrics.empty(); }));
}

void add(Hdf5SinkStats &stats, const hdf5::IoCounters &c)
{
    stats.rows_written += c.rows_written;
    stats.write_batches += c.write_batches;
    stats.rows_dropped += c.rows_dropped;
    stats.write_errors += c.write_errors;
    stats.flushes += c.flushes;
}

}  // namespace

Hdf5Sink::Hdf5Sink(Hdf5Options options) : m_options(std::move(options))
{
    m_options.dir = m_options.dir.lexically_normal();
    if (!m_options.dir.has_filename() && m_options.dir.has_parent_path())
        m_options.dir = m_options.dir.parent_path();  // "a/b/" -> "a/b"
    m_options.compression_level = std::clamp(m_options.compression_level, 0, 9);
    m_options.max_open_files = std::max<size_t>(m_options.max_open_files, 1);
    m_options.batch_rows = std::max<size_t>(m_options.batch_rows, 1);
    m_options.flush_interval_s = std::max(m_options.flush_interval_s, 0.0);
    m_options.idle_close_s = std::max(m_options.idle_close_s, 0.0);
    m_options.memory_budget_bytes = std::max(m_options.memory_budget_bytes, k_min_budget);
    m_budget = m_options.memory_budget_bytes - k_open_file_bytes;
    m_codec = std::make_unique<hdf5::ChunkCodec>(m_options.compression_level);
    m_space = std::make_unique<hdf5::DiskSpace>(m_options.dir, m_options.min_free_bytes, m_options.free_bytes_probe);
}

Hdf5Sink::~Hdf5Sink() { close_all(); }

void Hdf5Sink::report(const std::string &job_id, const Error &error)
{
    uint64_t suppressed = 0;
    if (!m_log_limit.allow(&suppressed))
        return;
    if (suppressed > 0)
        spdlog::error("hdf5: job {}: {} ({} similar messages suppressed)", job_id, error.message(), suppressed);
    else
        spdlog::error("hdf5: job {}: {}", job_id, error.message());
}

size_t Hdf5Sink::open_jobs() const
{
    return static_cast<size_t>(
        std::count_if(m_jobs.begin(), m_jobs.end(), [](const auto &j) { return j.second->file != nullptr; }));
}

std::string Hdf5Sink::stats_text() const
{
    const Hdf5SinkStats s = stats();
    std::string text = "hdf5: " + std::to_string(s.rows_written) + " rows written, " + std::to_string(s.files_opened) +
                       " files opened, " + std::to_string(s.write_errors) + " write errors, " +
                       std::to_string(s.rows_dropped) + " rows dropped";
    if (s.duplicates_dropped > 0)
        text += ", " + std::to_string(s.duplicates_dropped) + " duplicates dropped";
    if (s.acks > 0 || s.messages_deferred > 0)
        text += ", " + std::to_string(s.acks) + " acknowledgements, " + std::to_string(s.messages_deferred) +
                " messages deferred (to be resent)";
    if (s.files_foreign > 0)
        text += ", " + std::to_string(s.files_foreign) + " opens refused (another collector's file)";
    if (s.tsdb_points_recorded > 0 || s.tsdb_points_unrecorded > 0)
        text += ", " + std::to_string(s.tsdb_points_recorded) + " undelivered time-series points recorded in files (" +
                std::to_string(s.tsdb_points_unrecorded) + " not recordable)";
    return text;
}

Hdf5SinkStats Hdf5Sink::stats() const
{
    Hdf5SinkStats s = m_stats;
    s.memory_estimate_bytes = estimate();
    s.write_pauses = m_space->pauses();
    s.writing_paused = m_space->paused();
    return s;
}

bool Hdf5Sink::writable() { return m_space->check(); }

void Hdf5Sink::consume(const wire::Message &msg, const Delivery &delivery) noexcept
{
    try {
        hdf5::ErrorSilencer silence;
        consume_message(msg, delivery);
    } catch (const std::exception &e) {
        ++m_stats.write_errors;
        report(msg.job_id, Error(Errc::internal, e.what()));
    } catch (...) {
        ++m_stats.write_errors;
    }
}

JobState *Hdf5Sink::job_for(const std::string &job_id)
{
    if (auto it = m_jobs.find(job_id); it != m_jobs.end())
        return it->second.get();
    auto path = job_file(m_options.dir, job_id, JobFile::data);
    if (path.parent_path() != m_options.dir || path.filename() == "." || path.filename() == "..") {
        ++m_stats.messages_dropped;
        report(job_id, Error::invalid("job file " + path.string() + " would lie outside " + m_options.dir.string()));
        return nullptr;
    }
    auto job = std::make_unique<JobState>();
    job->job_id = job_id;
    job->path = std::move(path);
    JobState *raw = job.get();
    m_jobs.emplace(job_id, std::move(job));
    sync_state_bytes(*raw);
    return raw;
}

void Hdf5Sink::drop_rows(JobState &job, const wire::Message &msg)
{
    const uint64_t rows = rows_of(msg);
    if (rows == 0)
        return;
    m_stats.rows_dropped += rows;
    auto &host = job.hosts[msg.host];
    host.rows_dropped += rows;
    host.dirty = true;
}

void Hdf5Sink::consume_message(const wire::Message &msg, const Delivery &delivery)
{
    const int64_t now = delivery.received_mono_ns > 0 ? delivery.received_mono_ns : monotonic_ns();
    JobState *found = job_for(msg.job_id);
    if (!found)
        return;
    JobState &job = *found;
    job.last_activity_ns = now;
    const bool acked = wire::wants_ack(msg);
    if (!job.file && !open_job(job, now)) {
        if (acked) {
            ++m_stats.messages_deferred;  // not acknowledged: it comes again
            return;
        }
        ++m_stats.messages_dropped;
        drop_rows(job, msg);
        sync_state_bytes(job);
        return;
    }
    const size_t hosts_before = job.hosts.size();
    HostAggregate &host = job.hosts[msg.host];
    bool room = false;
    if (acked) {
        // Stored only in order, and only when there is room for it now.
        const OrderCheck order = check_order(host, msg);
        if (order.order == Order::duplicate) {
            ++m_stats.duplicates_dropped;
            host.ack_due = true;  // its acknowledgement may have been lost
            return;
        }
        room = order.order == Order::store && make_room(hdf5::JobWriter::append_bound(msg), &job, now) && job.file;
        if (!room) {
            ++m_stats.messages_deferred;
            if (job.hosts.size() != hosts_before || order.given_up > 0)
                sync_state_bytes(job);
            return;
        }
        observe_message(host, msg, delivery.lost);
        host.ack_due = true;
    } else {
        const SequenceCheck seq = check_sequence(host, msg, delivery.sender_new);
        if (seq.duplicate) {
            ++m_stats.duplicates_dropped;  // its row is stored already (a new host never has a duplicate)
            return;
        }
        observe_message(host, msg, delivery.lost + seq.gap);
    }
    host.last_received_ns = now;
    if (job.hosts.size() != hosts_before || !msg.meta.empty()) {
        note_reader(job, msg);
        sync_state_bytes(job);
    }
    if (room || (make_room(hdf5::JobWriter::append_bound(msg), &job, now) && job.file)) {
        job.file->append(msg);
        sync_file_bytes(job);
    } else {
        drop_rows(job, msg);
    }
    if (msg.kind != wire::MessageKind::job_end)
        flags::check_window(m_options.flag_rules, job.hosts, job.flags, msg.time_ns);
    if (msg.kind == wire::MessageKind::job_end)
        finish_job(job, now);
    else if (job.file && (job.flags.changed || job.file->max_pending_rows() >= m_options.batch_rows))
        flush_job(job, now);
    for (const auto &[a, b] : m_sharing.observe(msg.host, msg.job_id, msg.kind, msg.time_ns))
        record_overlap(a, msg.host, b);
    note_peak();
}

// Acknowledge, for each acknowledged host with something new, everything
// up to its last seq: the caller knows the job's file holds it all (just
// flushed, or nothing pending).
void Hdf5Sink::emit_acks(JobState &job)
{
    for (auto &[name, host] : job.hosts)
        if (host.ack_due && host.seq_known) {
            host.ack_due = false;
            m_acks.push_back({host.sender, host.last_seq});
            ++m_stats.acks;
        }
}

void Hdf5Sink::record_losses(const std::vector<SinkLoss> &losses, int64_t now_mono_ns) noexcept
{
    for (const SinkLoss &loss : losses) {
        try {
            hdf5::ErrorSilencer silence;
            record_loss(loss, now_mono_ns);
        } catch (const std::exception &e) {
            m_stats.tsdb_points_unrecorded += loss.points;
            report(loss.job_id, Error(Errc::internal, e.what()));
        } catch (...) {
            m_stats.tsdb_points_unrecorded += loss.points;
        }
    }
}

// Points of the job the time-series sink could not deliver: added to the
// host's tsdb_points_dropped, written at the next flush; a job whose
// summary is written (a host ended) has it written again now. A job the
// sink holds no file of gets none for this.
void Hdf5Sink::record_loss(const SinkLoss &loss, int64_t now_ns)
{
    std::error_code ec;
    if (!m_jobs.contains(loss.job_id) &&
        !std::filesystem::is_regular_file(job_file(m_options.dir, loss.job_id, JobFile::data), ec)) {
        m_stats.tsdb_points_unrecorded += loss.points;
        report(loss.job_id, Error(Errc::not_found, "no file to record " + std::to_string(loss.points) +
                                                       " points the time-series sink could not deliver"));
        return;
    }
    JobState *job = job_for(loss.job_id);
    if (!job)
        return;
    job->last_activity_ns = now_ns;
    if (!job->file && !open_job(*job, now_ns)) {
        m_stats.tsdb_points_unrecorded += loss.points;
        report(loss.job_id, Error(Errc::internal, "could not open the file to record " + std::to_string(loss.points) +
                                                      " points the time-series sink could not deliver"));
        return;
    }
    auto &host = job->hosts[loss.host];
    host.tsdb_points_dropped += loss.points;
    host.dirty = true;
    m_stats.tsdb_points_recorded += loss.points;
    if (std::any_of(job->hosts.begin(), job->hosts.end(), [](const auto &h) { return h.second.ended; }))
        finish_job(*job, now_ns);
    sync_state_bytes(*job);
}

void Hdf5Sink::take_acks(std::vector<wire::Ack> &out)
{
    for (auto &ack : m_acks)
        out.push_back(std::move(ack));
    m_acks.clear();
}

// Recording an overlap never opens a file: an open job writes it at its
// next flush; a closed job keeps it pending in its hosts until its file is
// opened again for a message; a forgotten job loses it.
void Hdf5Sink::record_overlap(const std::string &job_id, const std::string &host, const std::string &other)
{
    auto it = m_jobs.find(job_id);
    if (it == m_jobs.end())
        return;
    JobState &job = *it->second;
    auto &agg = job.hosts[host];
    if (!agg.overlapping_jobs.insert(other).second)
        return;
    agg.dirty = true;
    const size_t bytes = k_set_entry_bytes + (other.capacity() > 15 ? other.size() + 1 : 0);
    job.state_bytes += bytes;  // as sync_state_bytes() counts it, without walking every overlap again
    m_state_bytes += bytes;
}

// Bring a closed job's rows and structure into memory: open (or create) its
// file now when writing is possible, so that an unusable file drops the
// message at once; else only in memory, the file comes at the first flush.
bool Hdf5Sink::open_job(JobState &job, int64_t now_ns)
{
    const bool can_write = writable();
    if (can_write && now_ns < job.retry_after_ns)
        return false;
    if (!make_room(sizeof(hdf5::JobWriter) + (can_write ? k_open_file_bytes : 0), &job, now_ns))
        return false;
    job.file = std::make_unique<hdf5::JobWriter>(job.path, job.job_id, m_options.writer,
                                                 hdf5::SegmentOptions{m_options.compression_level}, *m_codec);
    job.last_flush_ns = now_ns;
    sync_file_bytes(job);
    if (can_write) {
        if (!attach(job, now_ns)) {
            forget_file(job);
            return false;
        }
    } else if (!job.restored) {
        // Read what an existing file holds (reading needs no space).
        std::error_code ec;
        if (std::filesystem::is_regular_file(job.path, ec)) {
            hdf5::PropList fapl = hdf5::file_access_plist();
            hdf5::File file{H5Fopen(job.path.c_str(), H5F_ACC_RDONLY, fapl.get())};
            if (auto r = file ? hdf5::restore_hosts(file.get(), job.hosts) : Result<void>(hdf5::h5_error("open")); !r)
                report(job.job_id, r.error().with_context("read " + job.path.string()));
            if (file)
                hdf5::restore_flags(file.get(), job.flags.raised);
        }
        job.restored = true;
        note_restored_end(job);
        sync_state_bytes(job);
    }
    return true;
}

// A job whose every host had ended before (a collector restart) was
// announced then: a resent job_end does not run on-job-end again.
void Hdf5Sink::note_restored_end(JobState &job)
{
    job.announced =
        job.announced || (!job.hosts.empty() && std::all_of(job.hosts.begin(), job.hosts.end(), [](const auto &h) {
            return !h.second.started || h.second.ended;
        }));
}

bool Hdf5Sink::attach(JobState &job, int64_t now_ns)
{
    if (job.file->attached())
        return true;
    while (m_open_files >= m_options.max_open_files && !m_attached.empty())
        detach(*m_attached.front());
    auto opened = job.file->attach();
    if (!opened) {
        ++(opened.error().code() == Errc::conflict ? m_stats.files_foreign : m_stats.write_errors);
        job.retry_after_ns = now_ns + std::clamp(to_ns(m_options.flush_interval_s), k_min_retry_ns, k_max_retry_ns);
        report(job.job_id, opened.error());
        return false;
    }
    ++m_open_files;
    ++m_stats.files_opened;
    job.attached = m_attached.insert(m_attached.end(), &job);
    if (!opened->quarantined.empty()) {
        ++m_stats.files_quarantined;
        spdlog::warn("hdf5: job {}: {} is not a readable HDF5 file; renamed it to {} and started a new file",
                     job.job_id, job.path.string(), opened->quarantined.string());
    }
    if (!job.restored && opened->existed) {
        if (auto r = hdf5::restore_hosts(job.file->id(), job.hosts); !r) {
            ++m_stats.write_errors;
            report(job.job_id, r.error());
        }
        hdf5::restore_flags(job.file->id(), job.flags.raised);
        note_restored_end(job);
        sync_state_bytes(job);
    }
    job.restored = true;
    share_file(job);
    if (opened->created)  // a new file: every known host needs its attributes
        for (auto &[name, host] : job.hosts)
            host.dirty = true;
    note_peak();
    return true;
}

// The job's user, from the first metadata that names one; a host that names
// another user is logged once and changes nothing.
void Hdf5Sink::note_reader(hdf5::JobState &job, const wire::Message &msg)
{
    if (m_options.owner != hdf5::FileOwner::job_user)
        return;
    for (const auto &[key, value] : msg.meta) {
        if (key != "user" || value.empty())
            continue;
        if (job.reader.empty()) {
            job.reader = value;
            share_file(job);
        } else if (value != job.reader && !job.reader_conflict) {
            job.reader_conflict = true;
            report(job.job_id, Error::invalid("host " + msg.host + " says the job's user is '" + value +
                                              "', an earlier message said '" + job.reader + "': only '" + job.reader +
                                              "' may read " + job.path.string()));
        }
    }
}

// Give the job's user read access, once, when the file is on disk.
void Hdf5Sink::share_file(hdf5::JobState &job)
{
    if (job.reader_granted || job.reader.empty() || !job.file || !job.file->attached())
        return;
    job.reader_granted = true;
    if (auto r = hdf5::grant_read(job.path, job.reader); !r) {
        ++m_stats.share_errors;
        report(job.job_id, r.error());
        return;
    }
    ++m_stats.files_shared;
}

void Hdf5Sink::detach(JobState &job)
{
    if (!job.file || !job.file->attached())
        return;
    if (auto r = job.file->detach(); !r) {
        ++m_stats.write_errors;
        report(job.job_id, r.error());
    }
    --m_open_files;
    ++m_stats.files_closed;
    if (job.attached) {
        m_attached.erase(*job.attached);
        job.attached.reset();
    }
}

// After an HDF5 error: close the file without writing to it again, drop the
// rows it held (counted in each host's rows_dropped, written to the file
// once it is open again) and forget its structure.
void Hdf5Sink::fail_file(JobState &job, int64_t now_ns)
{
    if (job.file->attached()) {
        job.file->abandon();
        --m_open_files;
        ++m_stats.files_closed;
        if (job.attached) {
            m_attached.erase(*job.attached);
            job.attached.reset();
        }
    }
    ++m_stats.files_abandoned;
    m_stats.rows_dropped += job.file->drop_pending(job.hosts);
    forget_file(job);
    if (std::any_of(job.hosts.begin(), job.hosts.end(), [](const auto &h) { return h.second.acked; })) {
        // The rows lost here were never acknowledged: their senders resend
        // them. Forget what the hosts counted since the last good flush, and
        // start again from what the file holds (read at the next open).
        job.hosts.clear();
        job.restored = false;
        sync_state_bytes(job);
    }
    // Not again at once: unless writing is paused for want of space (then
    // rows wait in memory), messages are dropped until the retry time.
    if (writable())
        job.retry_after_ns = now_ns + std::clamp(to_ns(m_options.flush_interval_s), k_min_retry_ns, k_max_retry_ns);
}

void Hdf5Sink::forget_file(JobState &job)
{
    detach(job);
    m_file_bytes -= std::min<uint64_t>(m_file_bytes, job.file_bytes);
    job.file_bytes = 0;
    job.file.reset();
}

bool Hdf5Sink::flush_job(JobState &job, int64_t now_ns)
{
    if (!job.file || !writable())
        return false;
    if (!job.file->attached()) {
        if (!m_making_room && !make_room(k_open_file_bytes, &job, now_ns))
            return false;
        if (!attach(job, now_ns)) {
            m_stats.rows_dropped += job.file->drop_pending(job.hosts);
            forget_file(job);
            return false;
        }
    }
    touch_file(job);
    hdf5::IoCounters counters;
    auto r = job.file->flush(job.hosts, counters);
    add(m_stats, counters);
    job.last_flush_ns = now_ns;
    if (r && job.flags.changed) {
        r = job.file->write_flags(job.flags.raised);
        if (r)
            job.flags.changed = false;
    }
    if (r && m_options.fsync)
        r = job.file->sync();
    if (!r) {
        report(job.job_id, r.error());
        fail_file(job, now_ns);
        return false;
    }
    sync_file_bytes(job);
    sync_state_bytes(job);
    emit_acks(job);
    return true;
}

// Write the job's rows, then its summary from what its hosts hold; false
// when that must wait (the file cannot be opened, a write failed).
bool Hdf5Sink::write_summary_now(JobState &job, int64_t now_ns, JobSummary *written, bool unended)
{
    if (!job.file && !open_job(job, now_ns))
        return false;
    if (!flush_job(job, now_ns))
        return false;
    JobSummary summary = summarize(job.job_id, job.hosts);
    flags::check_end(m_options.flag_rules, job.hosts, summary, job.flags);
    if (unended)
        flags::check_unended(m_options.flag_rules, summary, m_options.idle_close_s, job.flags);
    summary.flags = job.flags.raised;
    job.flags.changed = false;
    if (auto r = job.file->write_summary(summary); !r) {
        ++m_stats.write_errors;
        report(job.job_id, r.error());
        fail_file(job, now_ns);
        return false;
    }
    ++m_stats.summaries_written;
    // The same summary as JSON beside the file, for colmet-job (no HDF5
    // there); a failure leaves the file's /summary as it is.
    summary.file = job.path;
    if (auto r = hdf5::write_summary_file(job_file(m_options.dir, job.job_id, JobFile::summary), summary, job.reader);
        !r) {
        ++m_stats.write_errors;
        report(job.job_id, r.error());
    }
    if (written)
        *written = std::move(summary);
    return true;
}

// The job's first summary written once every host ended, or after its
// silence: to the listener (on-job-end), once.
void Hdf5Sink::announce(JobState &job, JobSummary summary)
{
    if (job.announced || !m_ended_job)
        return;
    job.announced = true;
    summary.file = job.path;
    try {
        std::string json = summary_json(summary, job.reader);
        m_ended_job({job.job_id, job.reader, job.path.string(), std::move(json)});
    } catch (const std::exception &e) {  // allocation: the job goes without
        spdlog::error("hdf5: job {}: its end not announced: {}", job.job_id, e.what());
    }
}

// A host's job_end: write its rows and the summary; once every host that
// started has ended, close the file. Later if writing is paused or fails.
void Hdf5Sink::finish_job(JobState &job, int64_t now_ns)
{
    job.summary_pending = true;
    JobSummary summary;
    if (!writable() || now_ns < job.retry_after_ns || !write_summary_now(job, now_ns, &summary))
        return;
    job.summary_pending = false;
    bool all_ended = std::all_of(job.hosts.begin(), job.hosts.end(),
                                 [](const auto &h) { return !h.second.started || h.second.ended; });
    if (all_ended) {
        announce(job, std::move(summary));
        close_job(job, now_ns);
    }
}

// A job silent for idle_close_s while some host's job_end never came (the
// collector was down when it was sent, the sampler was killed): its summary
// from what arrived, marked by hosts_without_job_end. A job_end that comes
// later writes the summary again.
void Hdf5Sink::summarize_unfinished(JobState &job, int64_t now_ns)
{
    const auto unended = std::count_if(job.hosts.begin(), job.hosts.end(),
                                       [](const auto &h) { return h.second.seen && !h.second.ended; });
    JobSummary summary;
    if (unended == 0 || job.summary_pending || now_ns < job.retry_after_ns ||
        !write_summary_now(job, now_ns, &summary, true))
        return;
    ++m_stats.summaries_incomplete;
    announce(job, std::move(summary));
    spdlog::warn("hdf5: job {}: no job_end from {} of its {} hosts after {} s of silence: summary written from what "
                 "arrived (hosts_without_job_end = {})",
                 job.job_id, unended, job.hosts.size(), m_options.idle_close_s, unended);
}

// Write what the job holds and free its memory; false when that must wait
// (writing is paused and something is left to write).
bool Hdf5Sink::close_job(JobState &job, int64_t now_ns)
{
    if (!job.file)
        return true;
    if (needs_flush(job) && !flush_job(job, now_ns))
        return !job.file;  // a failed flush already forgot the file
    forget_file(job);
    return true;
}

void Hdf5Sink::tick(int64_t now_mono_ns) noexcept
{
    try {
        hdf5::ErrorSilencer silence;
        const bool can_write = writable();
        const int64_t idle_ns = to_ns(m_options.idle_close_s);
        const int64_t flush_ns = to_ns(m_options.flush_interval_s);
        const int64_t wall_now = realtime_ns();
        for (auto it = m_jobs.begin(); it != m_jobs.end();) {
            JobState &job = *it->second;
            const bool idle = now_mono_ns - job.last_activity_ns >= idle_ns;
            if (!job.announced)
                flags::check_silence(m_options.flag_rules, job.hosts, job.flags, now_mono_ns, wall_now);
            if (can_write) {
                if (job.flags.changed && job.file && !idle)
                    flush_job(job, now_mono_ns);
                if (job.summary_pending && now_mono_ns >= job.retry_after_ns)
                    finish_job(job, now_mono_ns);
                if (idle)
                    summarize_unfinished(job, now_mono_ns);
                if (job.file && idle)
                    close_job(job, now_mono_ns);
                else if (job.file && now_mono_ns - job.last_flush_ns >= flush_ns && needs_flush(job))
                    flush_job(job, now_mono_ns);
            }
            if (!needs_flush(job))
                emit_acks(job);  // duplicates of what the file holds
            if (idle && !job.file) {
                // The file holds all we know (a pending overlap is lost); a
                // later message restores the rest.
                m_sharing.forget(job.job_id);
                m_state_bytes -= std::min<uint64_t>(m_state_bytes, job.state_bytes);
                it = m_jobs.erase(it);
            } else {
                ++it;
            }
        }
        make_room(0, nullptr, now_mono_ns);
        note_peak();
    } catch (const std::exception &e) {
        ++m_stats.write_errors;
        report("-", Error(Errc::internal, e.what()));
    } catch (...) {
        ++m_stats.write_errors;
    }
}

void Hdf5Sink::flush_all(int64_t now_mono_ns) noexcept
{
    try {
        hdf5::ErrorSilencer silence;
        if (!writable())
            return;
        for (auto &[id, job] : m_jobs)
            if (needs_flush(*job))
                flush_job(*job, now_mono_ns);
    } catch (const std::exception &e) {
        ++m_stats.write_errors;
        report("-", Error(Errc::internal, e.what()));
    } catch (...) {
        ++m_stats.write_errors;
    }
}

void Hdf5Sink::close_all() noexcept
{
    try {
        hdf5::ErrorSilencer silence;
        const int64_t now = monotonic_ns();
        uint64_t lost = 0;
        for (auto &[id, job] : m_jobs) {
            if (job->summary_pending)
                finish_job(*job, std::max(now, job->retry_after_ns));
            if (!close_job(*job, now) && job->file) {
                lost += job->file->drop_pending(job->hosts);  // writing is paused: nowhere to put them
                forget_file(*job);
            }
        }
        if (lost > 0) {
            m_stats.rows_dropped += lost;
            spdlog::error("hdf5: {}: writing is paused (no free space): {} buffered rows lost at exit",
                          m_options.dir.string(), lost);
        }
        m_jobs.clear();
        m_attached.clear();
        m_state_bytes = 0;
        m_file_bytes = 0;
    } catch (...) {
        ++m_stats.write_errors;
    }
}

Result<std::unique_ptr<Hdf5Sink>> make_hdf5_sink(Hdf5Options options)
{
    if (options.dir.empty())
        return Error::invalid("hdf5: no output directory given");
    std::error_code ec;
    if (!std::filesystem::exists(options.dir, ec)) {
        std::filesystem::create_directories(options.dir, ec);
        if (ec)
            return Error::system("create directory", options.dir.string(), ec.value());
        if (::chmod(options.dir.c_str(), hdf5::output_directory_mode(options.owner)) != 0)
            return Error::system("chmod", options.dir.string(), errno);
    }
    if (!std::filesystem::is_directory(options.dir, ec))
        return Error::invalid("hdf5: " + options.dir.string() + " is not a directory");
    auto canonical = std::filesystem::canonical(options.dir, ec);
    if (ec)
        return Error::system("resolve", options.dir.string(), ec.value());
    if (::access(canonical.c_str(), W_OK | X_OK) != 0)
        return Error::system("write to", canonical.string(), errno);
    options.dir = canonical;
    struct stat st {};
    if (options.owner == hdf5::FileOwner::job_user && ::stat(canonical.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH))
        spdlog::warn("hdf5: users cannot reach their job files: {} is mode {:04o}, without search permission for "
                     "others (chmod o+x {}, or 0711 so that they cannot list it)",
                     canonical.string(), st.st_mode & 07777, canonical.string());
    return std::make_unique<Hdf5Sink>(std::move(options));
}

}  // namespace colmet::collector
