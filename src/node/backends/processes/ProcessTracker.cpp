#include "node/backends/processes/ProcessTracker.hpp"

#include <algorithm>

namespace colmet::node::backends {
ProcessTracker::ProcessTracker(size_t expected)
{
    m_live.reserve(expected);
    m_next.reserve(expected);
}

bool ProcessTracker::alive_now(pid_t pid) const noexcept
{
    auto it = std::lower_bound(m_next.begin(), m_next.end(), pid,
                               [](const Entry &e, pid_t value) { return e.p.pid < value; });
    return it != m_next.end() && it->p.pid == pid;
}

void ProcessTracker::settle(const Entry &gone) noexcept
{
    if (!gone.has_io || alive_now(gone.p.ppid))
        return;  // nothing known, or the parent in the job will absorb it when it reaps it
    for (size_t i = 0; i < m_exited.size(); ++i)
        m_exited[i] += gone.p.io[i];
}

void ProcessTracker::end() noexcept
{
    std::sort(m_next.begin(), m_next.end(), [](const Entry &a, const Entry &b) { return a.p.pid < b.p.pid; });

    // Merge the previous sample with this one (both sorted by pid).
    auto next = m_next.begin();
    for (const Entry &old : m_live) {
        while (next != m_next.end() && next->p.pid < old.p.pid)
            ++next;
        bool same = next != m_next.end() && next->p.pid == old.p.pid && next->p.starttime == old.p.starttime;
        if (!same) {
            settle(old);  // exited, or its pid now belongs to another process
            continue;
        }
        if (!next->p.io_read && old.has_io) {  // unreadable now: keep the last values
            next->p.io = old.p.io;
            next->has_io = true;
        }
    }

    ProcIo total = m_exited;
    m_threads = 0;
    m_io_complete = true;
    for (const Entry &e : m_next) {
        m_threads += e.p.threads;
        m_io_complete = m_io_complete && e.p.io_read;
        if (e.has_io)
            for (size_t i = 0; i < total.size(); ++i)
                total[i] += e.p.io[i];
    }
    if (m_io_complete)
        for (size_t i = 0; i < total.size(); ++i)
            m_reported[i] = std::max(m_reported[i], total[i]);
    m_live.swap(m_next);
}

}  // namespace colmet::node::backends
