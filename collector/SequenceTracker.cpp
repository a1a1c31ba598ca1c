#include "collector/SequenceTracker.hpp"

namespace colmet::collector {

uint64_t SequenceTracker::observe(const std::string &sender, uint64_t seq, int64_t now_mono_ns, bool *first,
                                  bool *repeat)
{
    auto it = m_last.find(sender);
    if (first)
        *first = it == m_last.end();
    if (repeat)
        *repeat = it != m_last.end() && seq <= it->second.seq;
    if (it == m_last.end()) {
        if (m_last.size() >= m_max)
            evict_oldest();
        m_last.emplace(sender, Entry{seq, now_mono_ns});
        // The first message heard from a sender: nothing to compare with
        // here (after a collector restart, the HDF5 sink compares with the
        // last seq its file holds).
        return 0;
    }
    uint64_t lost = seq > it->second.seq ? seq - it->second.seq - 1 : 0;
    if (seq > it->second.seq)
        it->second.seq = seq;
    it->second.seen_ns = now_mono_ns;
    return lost;
}

void SequenceTracker::evict_oldest()
{
    // Rare (only when the table is full): a linear scan is fine.
    auto oldest = m_last.begin();
    for (auto it = m_last.begin(); it != m_last.end(); ++it)
        if (it->second.seen_ns < oldest->second.seen_ns)
            oldest = it;
    if (oldest != m_last.end())
        m_last.erase(oldest);
}

}  // namespace colmet::collector
