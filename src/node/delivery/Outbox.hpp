// The sampler's store of messages the collector has not acknowledged yet
// (acknowledged delivery, docs/protocol.md). It is also the send queue:
// messages are sent from it in seq order, and sent again from the oldest
// unacknowledged one after a reconnection or an acknowledgement timeout, so
// the collector always sees a sender's messages in order.
//
// Two tiers: memory, bounded in bytes, and behind it the node spool
// (Spool.hpp), optional. A message that takes memory over its bound pushes
// the oldest ones in memory to the spool; they stay in the queue, read back
// from the file when their turn to be sent comes. When the spool is full the
// oldest spooled messages are dropped, an eighth of its bound at a time (so
// that its file is rewritten rarely); without a spool, or when it fails,
// the oldest in memory are dropped. Every drop is counted, and `base()`
// moves past what was dropped at the front, which tells the collector those
// seqs will not come from here again.
//
// The queue may have holes: a message dropped between spooled and in-memory
// ones (the spool failed), or records a damaged spool file lost (a flush).
// Sending stops at a hole until everything before it is acknowledged; then
// `base()` is past the hole, so the collector counts it lost instead of
// waiting for it.
#pragma once

#include "node/delivery/Spool.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace colmet::node {

struct OutboxEntry {
    uint64_t seq = 0;
    std::string bytes;   // the encoded message; empty once spooled
    size_t base_at = 0;  // offset of its `base` field (wire::patch_base)
    int64_t time_ns = 0;
    // In the spool: the message is at [spool_offset, + spool_size) of its file.
    bool spooled = false;
    uint64_t spool_offset = 0;
    uint32_t spool_size = 0;
};

struct OutboxStats {
    uint64_t queued = 0;        // messages put in
    uint64_t sent = 0;          // sends, resends included
    uint64_t resent = 0;        // of which resends
    uint64_t acknowledged = 0;  // messages taken out by an acknowledgement
    uint64_t overflowed = 0;    // given up: pushed out by the bounds, or lost by the spool
    uint64_t spooled = 0;       // written to the spool
    uint64_t rewinds = 0;       // times sending started again from the oldest
};

class Outbox {
public:
    // Spool problems are reported here (once per kind), not thrown.
    using Warn = std::function<void(const std::string &)>;

    explicit Outbox(size_t max_bytes, std::unique_ptr<Spool> spool = {}, Warn warn = {});
    // A flush: every record of an existing spool file, in order, to be sent
    // and acknowledged (`records` from Spool::open_existing).
    static std::unique_ptr<Outbox> from_spool(std::unique_ptr<Spool> spool, const std::vector<SpooledRecord> &records,
                                              Warn warn = {});

    // Add the next message (seqs must increase).
    void push(OutboxEntry entry);
    // Forget every message up to `seq`; false when that acknowledges nothing
    // new (a repeated or stale acknowledgement). The spool file goes once
    // nothing in it is left unacknowledged.
    bool acknowledge(uint64_t seq);
    // The next message to send, its `base` brought up to date; null when all
    // are sent, or when sending waits at a hole.
    OutboxEntry *next();
    void sent();  // the one next() returned is sent
    // Send again from the oldest message held (after a reconnection or a
    // timeout); false when nothing is held.
    bool rewind();
    // The job end with messages still unacknowledged: every one held in
    // memory goes to the spool, and the file is rewritten without its
    // acknowledged records and synced. Returns how many messages the spool
    // holds for a later flush (0 without a spool).
    uint64_t spool_all();
    // Drop every message older than `time_ns` (a flush: the collector would
    // refuse them); returns how many.
    uint64_t drop_older_than(int64_t time_ns);
    // A flush gave up for now: rewrite the spool file with what is left.
    void keep_in_spool();

    // The lowest seq still held (the next one to be pushed when empty): what
    // the collector may still get from this sender.
    uint64_t base() const { return m_entries.empty() ? m_next_seq : m_entries.front().seq; }
    bool empty() const { return m_entries.empty(); }
    bool all_sent() const { return m_cursor == m_entries.size(); }
    size_t size() const { return m_entries.size(); }
    size_t bytes() const { return m_bytes; }  // in memory
    size_t spooled() const { return m_spooled; }
    const Spool *spool() const { return m_spool.get(); }
    const OutboxStats &stats() const { return m_stats; }

private:
    void spill_oldest_in_memory();
    void drop_at(size_t index);
    bool make_spool_room(size_t size);
    void warn_once(int kind, const std::string &text);

    size_t m_max_bytes;
    std::unique_ptr<Spool> m_spool;
    Warn m_warn;
    bool m_spool_failed = false;        // after a write error: memory only
    unsigned m_warned = 0;              // bit per kind of warning given
    std::deque<OutboxEntry> m_entries;  // [0, m_spooled) in the spool, the rest in memory
    size_t m_spooled = 0;
    size_t m_cursor = 0;  // m_entries[m_cursor] is the next to send
    size_t m_bytes = 0;
    uint64_t m_next_seq = 0;
    uint64_t m_max_sent = 0;  // highest seq ever sent + 1 (counts resends)
    OutboxEntry m_loaded;     // a spooled message read back for sending
    OutboxStats m_stats;
};

}  // namespace colmet::node
