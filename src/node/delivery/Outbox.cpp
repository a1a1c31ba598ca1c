#include "node/delivery/Outbox.hpp"

#include "wire/codec.hpp"

namespace colmet::node {

void Outbox::push(OutboxEntry entry)
{
    m_next_seq = entry.seq + 1;
    m_bytes += entry.bytes.size();
    m_entries.push_back(std::move(entry));
    ++m_stats.queued;
    // Keep at least the newest message, whatever its size.
    while (m_bytes > m_max_bytes && m_entries.size() > 1) {
        OutboxEntry oldest = std::move(m_entries.front());
        m_entries.pop_front();
        m_bytes -= oldest.bytes.size();
        if (m_cursor > 0)
            --m_cursor;
        ++m_stats.overflowed;
        if (m_overflow)
            m_overflow(std::move(oldest));
    }
}

bool Outbox::acknowledge(uint64_t seq)
{
    bool progress = false;
    while (!m_entries.empty() && m_entries.front().seq <= seq) {
        m_bytes -= m_entries.front().bytes.size();
        m_entries.pop_front();
        if (m_cursor > 0)
            --m_cursor;
        ++m_stats.acknowledged;
        progress = true;
    }
    return progress;
}

OutboxEntry *Outbox::next()
{
    if (m_cursor >= m_entries.size())
        return nullptr;
    OutboxEntry &entry = m_entries[m_cursor];
    wire::patch_base(entry.bytes, entry.base_at, base());
    return &entry;
}

void Outbox::sent()
{
    const uint64_t seq = m_entries[m_cursor].seq;
    ++m_stats.sent;
    if (seq < m_max_sent)
        ++m_stats.resent;
    else
        m_max_sent = seq + 1;
    ++m_cursor;
}

bool Outbox::rewind()
{
    if (m_entries.empty())
        return false;
    if (m_cursor > 0)
        ++m_stats.rewinds;
    m_cursor = 0;
    return true;
}

std::deque<OutboxEntry> Outbox::take_all()
{
    std::deque<OutboxEntry> all;
    all.swap(m_entries);
    m_cursor = 0;
    m_bytes = 0;
    return all;
}

}  // namespace colmet::node
