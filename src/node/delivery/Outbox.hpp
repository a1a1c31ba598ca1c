// The sampler's store of messages the collector has not acknowledged yet
// (acknowledged delivery, docs/protocol.md). It is also the send queue:
// messages are sent from it in seq order, and sent again from the oldest
// unacknowledged one after a reconnection or an acknowledgement timeout, so
// the collector always sees a sender's messages in order.
//
// Bounded in bytes: a message that would take it over the bound pushes the
// oldest ones out. What leaves that way is handed to the overflow handler
// (the node spool), or, without one, counted as dropped; either way `base()`
// moves past it, which tells the collector those seqs will not come from
// here again.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

namespace colmet::node {

struct OutboxEntry {
    uint64_t seq = 0;
    std::string bytes;   // the encoded message
    size_t base_at = 0;  // offset of its `base` field (wire::patch_base)
};

struct OutboxStats {
    uint64_t queued = 0;        // messages put in
    uint64_t sent = 0;          // sends, resends included
    uint64_t resent = 0;        // of which resends
    uint64_t acknowledged = 0;  // messages taken out by an acknowledgement
    uint64_t overflowed = 0;    // pushed out by the bound (to the overflow handler, or dropped)
    uint64_t rewinds = 0;       // times sending started again from the oldest
};

class Outbox {
public:
    using Overflow = std::function<void(OutboxEntry &&)>;

    explicit Outbox(size_t max_bytes, Overflow overflow = {}) : m_max_bytes(max_bytes), m_overflow(std::move(overflow))
    {
    }

    // Add the next message (seqs must increase).
    void push(OutboxEntry entry);
    // Forget every message up to `seq`; false when that acknowledges nothing
    // new (a repeated or stale acknowledgement).
    bool acknowledge(uint64_t seq);
    // The next message to send, its `base` brought up to date; null when all
    // are sent.
    OutboxEntry *next();
    void sent();  // the one next() returned is sent
    // Send again from the oldest message held (after a reconnection or a
    // timeout); false when nothing is held.
    bool rewind();

    // The lowest seq still held (the next one to be pushed when empty): what
    // the collector may still get from this sender.
    uint64_t base() const { return m_entries.empty() ? m_next_seq : m_entries.front().seq; }
    bool empty() const { return m_entries.empty(); }
    bool all_sent() const { return m_cursor == m_entries.size(); }
    size_t size() const { return m_entries.size(); }
    size_t bytes() const { return m_bytes; }
    // Every message still held, oldest first, and forget them (job end with
    // the collector away: they go to the spool).
    std::deque<OutboxEntry> take_all();
    const OutboxStats &stats() const { return m_stats; }

private:
    size_t m_max_bytes;
    Overflow m_overflow;
    std::deque<OutboxEntry> m_entries;
    size_t m_cursor = 0;  // m_entries[m_cursor] is the next to send
    size_t m_bytes = 0;
    uint64_t m_next_seq = 0;
    uint64_t m_max_sent = 0;  // highest seq ever sent + 1 (counts resends)
    OutboxStats m_stats;
};

}  // namespace colmet::node
