#include "collector/sinks/hdf5/Hdf5Sink.hpp"

#include "collector/sinks/hdf5/ChunkCodec.hpp"
#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/sinks/hdf5/JobAggregate.hpp"
#include "collector/sinks/hdf5/JobFile.hpp"
#include "common/clock.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <unistd.h>

namespace colmet::collector {

namespace hdf5 {

// Everything the sink knows about one job. `file` is null while the file is
// closed (idle, least recently used, or ended); `hosts` stays, so a reopen
// needs no read-back. A state is forgotten after idle_close_s of silence; a
// later message rebuilds it from the file (restore_hosts).
struct JobState {
    std::string job_id;
    std::filesystem::path path;
    HostMap hosts;
    std::unique_ptr<JobFile> file;
    bool restored = false;  // hosts include what an existing file held
    int64_t last_activity_ns = 0;
    int64_t last_flush_ns = 0;
    int64_t retry_after_ns = 0;  // after a failed open, do not retry before
};

} // namespace hdf5

using hdf5::JobState;

namespace {

int64_t to_ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

constexpr int64_t k_min_retry_ns = 1'000'000'000;
constexpr int64_t k_max_retry_ns = 30'000'000'000;

bool needs_flush(const JobState &job)
{
    if (job.file && job.file->max_pending_rows() > 0)
        return true;
    return std::any_of(job.hosts.begin(), job.hosts.end(), [](const auto &h) { return h.second.dirty; });
}

void add(Hdf5SinkStats &stats, const hdf5::IoCounters &c)
{
    stats.rows_written += c.rows_written;
    stats.write_batches += c.write_batches;
    stats.rows_dropped += c.rows_dropped;
    stats.write_errors += c.write_errors;
    stats.flushes += c.flushes;
}

} // namespace

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
    m_codec = std::make_unique<hdf5::ChunkCodec>(m_options.compression_level);
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

void Hdf5Sink::consume_message(const wire::Message &msg, const Delivery &delivery)
{
    const int64_t now = delivery.received_mono_ns > 0 ? delivery.received_mono_ns : monotonic_ns();
    auto it = m_jobs.find(msg.job_id);
    if (it == m_jobs.end()) {
        auto path = job_file_path(m_options.dir, msg.job_id);
        if (path.parent_path() != m_options.dir || path.filename() == "." || path.filename() == "..") {
            ++m_stats.messages_dropped;
            report(msg.job_id, Error::invalid("job file " + path.string() + " would lie outside " +
                                              m_options.dir.string()));
            return;
        }
        auto job = std::make_unique<JobState>();
        job->job_id = msg.job_id;
        job->path = std::move(path);
        it = m_jobs.emplace(msg.job_id, std::move(job)).first;
    }
    JobState &job = *it->second;
    job.last_activity_ns = now;
    if (!ensure_open(job, now)) {
        ++m_stats.messages_dropped;
        m_stats.rows_dropped += static_cast<uint64_t>(std::count_if(
            msg.backends.begin(), msg.backends.end(), [](const auto &b) { return !b.metrics.empty(); }));
        return;
    }
    hdf5::observe_message(job.hosts[msg.host], msg, delivery.lost);
    if (auto r = job.file->append(msg); !r) {
        ++m_stats.write_errors;
        report(job.job_id, r.error());
    }
    if (msg.kind == wire::MessageKind::job_end)
        end_of_host(job, now);
    else if (job.file->max_pending_rows() >= m_options.batch_rows)
        flush_job(job, now);
    // Last: recording an overlap may reopen another job's file and so close this one.
    for (const auto &[a, b] : m_sharing.observe(msg.host, msg.job_id, msg.kind, msg.time_ns))
        record_overlap(a, msg.host, b, now);
}

void Hdf5Sink::record_overlap(const std::string &job_id, const std::string &host, const std::string &other,
                              int64_t now_ns)
{
    auto it = m_jobs.find(job_id);
    if (it == m_jobs.end())
        return;
    JobState &job = *it->second;
    auto &agg = job.hosts[host];
    if (!agg.overlapping_jobs.insert(other).second)
        return;
    agg.dirty = true;
    if (job.file)
        return;  // written at the job's next flush
    // The job's file is closed (it ended, or was idle or evicted): write the attribute now.
    if (ensure_open(job, now_ns))
        close_job(job);
}

bool Hdf5Sink::ensure_open(JobState &job, int64_t now_ns)
{
    if (job.file)
        return true;
    if (now_ns < job.retry_after_ns)
        return false;
    while (m_open_files >= m_options.max_open_files)
        close_least_recently_used();
    auto opened = hdf5::JobFile::open(job.path, job.job_id, hdf5::SegmentOptions{m_options.compression_level},
                                      *m_codec);
    if (!opened) {
        ++m_stats.write_errors;
        job.retry_after_ns = now_ns + std::clamp(to_ns(m_options.flush_interval_s), k_min_retry_ns, k_max_retry_ns);
        report(job.job_id, opened.error());
        return false;
    }
    if (!opened->quarantined.empty()) {
        ++m_stats.files_quarantined;
        spdlog::warn("hdf5: job {}: {} is not a readable HDF5 file; renamed it to {} and started a new file",
                     job.job_id, job.path.string(), opened->quarantined.string());
    }
    job.file = std::move(opened->file);
    ++m_open_files;
    ++m_stats.files_opened;
    job.last_flush_ns = now_ns;
    if (!job.restored && opened->existed) {
        if (auto r = hdf5::restore_hosts(job.file->id(), job.hosts); !r) {
            ++m_stats.write_errors;
            report(job.job_id, r.error());
        }
    }
    job.restored = true;
    if (!opened->existed)  // a new file: every known host needs its attributes
        for (auto &[name, host] : job.hosts)
            host.dirty = true;
    return true;
}

void Hdf5Sink::flush_job(JobState &job, int64_t now_ns)
{
    hdf5::IoCounters counters;
    auto r = job.file->flush(job.hosts, counters);
    add(m_stats, counters);
    if (!r)
        report(job.job_id, r.error());
    job.last_flush_ns = now_ns;
}

void Hdf5Sink::end_of_host(JobState &job, int64_t now_ns)
{
    flush_job(job, now_ns);
    if (auto r = job.file->write_summary(hdf5::summarize(job.job_id, job.hosts)); !r) {
        ++m_stats.write_errors;
        report(job.job_id, r.error());
    } else {
        ++m_stats.summaries_written;
    }
    // Every host that started has ended: the job is over on all its nodes.
    bool all_ended = std::all_of(job.hosts.begin(), job.hosts.end(),
                                 [](const auto &h) { return !h.second.started || h.second.ended; });
    if (all_ended)
        close_job(job);
}

void Hdf5Sink::close_job(JobState &job)
{
    if (!job.file)
        return;
    if (needs_flush(job))
        flush_job(job, job.last_activity_ns);
    if (auto r = job.file->close(); !r) {
        ++m_stats.write_errors;
        report(job.job_id, r.error());
    }
    job.file.reset();
    --m_open_files;
    ++m_stats.files_closed;
}

void Hdf5Sink::close_least_recently_used()
{
    JobState *oldest = nullptr;
    for (auto &[id, job] : m_jobs)
        if (job->file && (!oldest || job->last_activity_ns < oldest->last_activity_ns))
            oldest = job.get();
    if (!oldest) {  // cannot happen while m_open_files counts open files
        m_open_files = 0;
        return;
    }
    close_job(*oldest);
}

void Hdf5Sink::tick(int64_t now_mono_ns) noexcept
{
    try {
        hdf5::ErrorSilencer silence;
        const int64_t idle_ns = to_ns(m_options.idle_close_s);
        const int64_t flush_ns = to_ns(m_options.flush_interval_s);
        for (auto it = m_jobs.begin(); it != m_jobs.end();) {
            JobState &job = *it->second;
            const bool idle = now_mono_ns - job.last_activity_ns >= idle_ns;
            if (job.file && idle)
                close_job(job);
            else if (job.file && now_mono_ns - job.last_flush_ns >= flush_ns && needs_flush(job))
                flush_job(job, now_mono_ns);
            if (idle && !job.file) {
                m_sharing.forget(job.job_id);
                it = m_jobs.erase(it);  // the file holds all we know; a later message restores it
            } else {
                ++it;
            }
        }
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
        for (auto &[id, job] : m_jobs)
            if (job->file && needs_flush(*job))
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
        for (auto &[id, job] : m_jobs)
            close_job(*job);
        m_jobs.clear();
    } catch (...) {
        ++m_stats.write_errors;
    }
}

Result<std::unique_ptr<Hdf5Sink>> make_hdf5_sink(Hdf5Options options)
{
    if (options.dir.empty())
        return Error::invalid("hdf5: no output directory given");
    std::error_code ec;
    std::filesystem::create_directories(options.dir, ec);
    if (ec)
        return Error::system("create directory", options.dir.string(), ec.value());
    if (!std::filesystem::is_directory(options.dir, ec))
        return Error::invalid("hdf5: " + options.dir.string() + " is not a directory");
    auto canonical = std::filesystem::canonical(options.dir, ec);
    if (ec)
        return Error::system("resolve", options.dir.string(), ec.value());
    if (::access(canonical.c_str(), W_OK | X_OK) != 0)
        return Error::system("write to", canonical.string(), errno);
    options.dir = canonical;
    return std::make_unique<Hdf5Sink>(std::move(options));
}

} // namespace colmet::collector
