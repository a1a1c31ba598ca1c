// Per-sender sequence numbers, to count messages that never arrived. Bounded:
// senders not heard from for a while are forgotten.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace colmet::collector {

class SequenceTracker {
public:
    explicit SequenceTracker(size_t max_senders = 100000) : m_max(max_senders) {}

    // Messages missing between the previous seq of this sender and this one
    // (0 for the first message heard from a sender, and when seq did not
    // move forward: a duplicate or a reordered message). *first, when given,
    // tells whether the sender was unknown (first heard, or forgotten): a
    // sink that stored the sender's earlier messages can then count the gap
    // from what it stored.
    // *repeat, when given, tells whether this seq or a later one had come
    // already (a resend or a replay).
    uint64_t observe(const std::string &sender, uint64_t seq, int64_t now_mono_ns, bool *first = nullptr,
                     bool *repeat = nullptr);

    size_t size() const { return m_last.size(); }

private:
    struct Entry {
        uint64_t seq;
        int64_t seen_ns;
    };
    void evict_oldest();

    size_t m_max;
    std::unordered_map<std::string, Entry> m_last;
};

}  // namespace colmet::collector
