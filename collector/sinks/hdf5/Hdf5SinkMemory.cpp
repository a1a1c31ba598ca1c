// Hdf5Sink: the memory estimate and what the sink does to keep it under
// memory_budget_bytes.
#include "collector/sinks/hdf5/Hdf5Sink.hpp"

#include "collector/sinks/hdf5/JobState.hpp"

#include <algorithm>
#include <vector>

namespace colmet::collector {

using hdf5::JobState;

namespace {

constexpr size_t k_entry_bytes = 64;  // a hash or tree node's bookkeeping (estimate)

size_t heap(const std::string &s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

uint64_t Hdf5Sink::estimate() const
{
    const uint64_t counted = m_file_bytes + m_state_bytes + m_sharing.memory_bytes();
    return counted * k_overhead_percent / 100 + m_open_files * k_open_file_bytes;
}

void Hdf5Sink::note_peak() { m_stats.memory_peak_bytes = std::max(m_stats.memory_peak_bytes, estimate()); }

void Hdf5Sink::sync_file_bytes(JobState &job)
{
    const size_t bytes = job.file ? job.file->memory_bytes() : 0;
    m_file_bytes = m_file_bytes - std::min<uint64_t>(m_file_bytes, job.file_bytes) + bytes;
    job.file_bytes = bytes;
}

void Hdf5Sink::sync_state_bytes(JobState &job)
{
    size_t bytes = sizeof(JobState) + k_entry_bytes + heap(job.job_id) + heap(job.path.native());
    for (const auto &[name, host] : job.hosts)
        bytes += sizeof(host) + k_entry_bytes + heap(name) + host_heap_bytes(host);
    m_state_bytes = m_state_bytes - std::min<uint64_t>(m_state_bytes, job.state_bytes) + bytes;
    job.state_bytes = bytes;
}

void Hdf5Sink::touch_file(JobState &job)
{
    if (job.attached)
        m_attached.splice(m_attached.end(), m_attached, *job.attached);
}

// Make room for `need` more bytes under the budget (which keeps one open
// file in reserve for the flushes below): close open files, least recently
// used first (they are clean: closing writes nothing); then write the
// largest buffers; then close the least recently active jobs other than
// `current` (while writing is paused, only those with nothing to write).
// False when that was not enough: the caller drops what needed the room.
bool Hdf5Sink::make_room(size_t need, const JobState *current, int64_t now_ns)
{
    auto over = [&] { return estimate() + need > m_budget; };
    if (!over() || m_making_room)
        return !over();
    m_making_room = true;
    while (over() && !m_attached.empty()) {
        detach(*m_attached.front());
        ++m_stats.budget_evictions;
    }
    const bool can_write = writable();
    if (over() && can_write) {
        std::vector<JobState *> largest;
        for (auto &[id, job] : m_jobs)
            if (job->file && job->file->pending_bytes() > 0)
                largest.push_back(job.get());
        std::sort(largest.begin(), largest.end(), [](const JobState *a, const JobState *b) {
            return a->file->pending_bytes() > b->file->pending_bytes();
        });
        for (JobState *job : largest) {
            if (!over())
                break;
            flush_job(*job, now_ns);
            detach(*job);
            ++m_stats.budget_evictions;
        }
    }
    if (over()) {
        std::vector<JobState *> oldest;
        for (auto &[id, job] : m_jobs)
            if (job->file && job.get() != current &&
                (can_write || (job->file->pending_rows() == 0 && !job->summary_pending)))
                oldest.push_back(job.get());
        std::sort(oldest.begin(), oldest.end(),
                  [](const JobState *a, const JobState *b) { return a->last_activity_ns < b->last_activity_ns; });
        for (JobState *job : oldest) {
            if (!over())
                break;
            if (can_write)
                close_job(*job, now_ns);
            else
                forget_file(*job);  // nothing to write: its rows and tails come back from the file
            ++m_stats.budget_evictions;
        }
    }
    m_making_room = false;
    return !over();
}

}  // namespace colmet::collector
