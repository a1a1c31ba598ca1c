#include "node/delivery/Outbox.hpp"

#include "wire/codec.hpp"

namespace colmet::node {
namespace {

enum WarnKind : unsigned { k_warn_write = 1, k_warn_full = 2, k_warn_read = 4, k_warn_compact = 8 };

}  // namespace

Outbox::Outbox(size_t max_bytes, std::unique_ptr<Spool> spool, Warn warn)
    : m_max_bytes(max_bytes), m_spool(std::move(spool)), m_warn(std::move(warn))
{
}

std::unique_ptr<Outbox> Outbox::from_spool(std::unique_ptr<Spool> spool, const std::vector<SpooledRecord> &records,
                                           Warn warn)
{
    auto box = std::make_unique<Outbox>(0, std::move(spool), std::move(warn));
    for (const auto &r : records) {
        OutboxEntry e;
        e.seq = r.seq;
        e.base_at = r.base_at;
        e.time_ns = r.time_ns;
        e.spooled = true;
        e.spool_offset = r.offset;
        e.spool_size = r.size;
        box->m_entries.push_back(std::move(e));
    }
    box->m_spooled = box->m_entries.size();
    box->m_next_seq = records.empty() ? 0 : records.back().seq + 1;
    // Already sent once, by the sampler that spooled them.
    box->m_max_sent = box->m_next_seq;
    return box;
}

void Outbox::warn_once(int kind, const std::string &text)
{
    if ((m_warned & static_cast<unsigned>(kind)) != 0)
        return;
    m_warned |= static_cast<unsigned>(kind);
    if (m_warn)
        m_warn(text);
}

void Outbox::push(OutboxEntry entry)
{
    m_next_seq = entry.seq + 1;
    m_bytes += entry.bytes.size();
    m_entries.push_back(std::move(entry));
    ++m_stats.queued;
    // Keep at least the newest message in memory, whatever its size.
    while (m_bytes > m_max_bytes && m_entries.size() - m_spooled > 1)
        spill_oldest_in_memory();
}

void Outbox::drop_at(size_t index)
{
    OutboxEntry &e = m_entries[index];
    if (e.spooled) {
        m_spool->forget(e);
        --m_spooled;
    } else {
        m_bytes -= e.bytes.size();
    }
    m_entries.erase(m_entries.begin() + static_cast<std::ptrdiff_t>(index));
    if (m_cursor > index)
        --m_cursor;
    ++m_stats.overflowed;
}

bool Outbox::make_spool_room(size_t size)
{
    if (!m_spool->fits_live(size)) {
        // Full: the oldest go, an eighth of the bound at a time.
        const uint64_t bound = m_spool->bound();
        warn_once(k_warn_full, "the spool is full (" + std::to_string(bound >> 10) +
                                   " KiB for this job): dropping its oldest messages");
        while (m_spooled > 0 && !m_spool->fits_live(size + static_cast<size_t>(bound / 8)))
            drop_at(0);
        if (!m_spool->fits_live(size))
            return false;
    }
    if (!m_spool->fits_file(size)) {
        if (auto r = m_spool->compact(m_entries, m_spooled); !r) {
            warn_once(k_warn_compact, r.error().message());
            return false;
        }
        if (m_spooled == 0)
            m_spool->remove();
    }
    return m_spool->fits_file(size) || !m_spool->exists();
}

void Outbox::spill_oldest_in_memory()
{
    const size_t index = m_spooled;
    OutboxEntry &e = m_entries[index];
    if (m_spool && !m_spool_failed && make_spool_room(e.bytes.size())) {
        const size_t size = e.bytes.size();
        if (auto r = m_spool->append(e); r) {
            m_bytes -= size;
            ++m_spooled;
            ++m_stats.spooled;
            return;
        } else {
            warn_once(k_warn_write, r.error().message() + ": spooling stops, the oldest messages are dropped");
            m_spool_failed = true;
        }
    }
    drop_at(index);
}

bool Outbox::acknowledge(uint64_t seq)
{
    bool progress = false;
    while (!m_entries.empty() && m_entries.front().seq <= seq) {
        OutboxEntry &e = m_entries.front();
        if (e.spooled) {
            m_spool->forget(e);
            --m_spooled;
        } else {
            m_bytes -= e.bytes.size();
        }
        m_entries.pop_front();
        if (m_cursor > 0)
            --m_cursor;
        ++m_stats.acknowledged;
        progress = true;
    }
    if (progress && m_spooled == 0 && m_spool && m_spool->exists())
        m_spool->remove();  // every message it held is acknowledged (or given up)
    return progress;
}

OutboxEntry *Outbox::next()
{
    while (m_cursor < m_entries.size()) {
        if (m_cursor > 0 && m_entries[m_cursor].seq != m_entries[m_cursor - 1].seq + 1)
            return nullptr;  // a hole: wait until what is before it is acknowledged
        OutboxEntry &entry = m_entries[m_cursor];
        if (!entry.spooled) {
            wire::patch_base(entry.bytes, entry.base_at, base());
            return &entry;
        }
        auto bytes = m_spool->read(entry);
        if (!bytes) {
            warn_once(k_warn_read, bytes.error().message());
            drop_at(m_cursor);
            continue;
        }
        m_loaded.seq = entry.seq;
        m_loaded.base_at = entry.base_at;
        m_loaded.time_ns = entry.time_ns;
        m_loaded.bytes = std::move(*bytes);
        wire::patch_base(m_loaded.bytes, m_loaded.base_at, base());
        return &m_loaded;
    }
    return nullptr;
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

uint64_t Outbox::spool_all()
{
    if (!m_spool || m_entries.empty())
        return 0;
    while (m_spooled < m_entries.size() && !m_spool_failed)
        spill_oldest_in_memory();
    keep_in_spool();
    return m_spooled;
}

uint64_t Outbox::drop_older_than(int64_t time_ns)
{
    uint64_t dropped = 0;
    for (size_t i = 0; i < m_entries.size();)
        if (m_entries[i].time_ns < time_ns) {
            drop_at(i);
            ++dropped;
        } else {
            ++i;
        }
    return dropped;
}

void Outbox::keep_in_spool()
{
    if (!m_spool || !m_spool->exists())
        return;
    if (m_spooled == 0) {
        m_spool->remove();
        return;
    }
    // Records already acknowledged would only be sent again for nothing.
    if (m_spool->dead_bytes() > 0)
        if (auto r = m_spool->compact(m_entries, m_spooled); !r)
            warn_once(k_warn_compact, r.error().message());
    if (auto r = m_spool->sync(); !r)
        warn_once(k_warn_write, r.error().message());
}

}  // namespace colmet::node
