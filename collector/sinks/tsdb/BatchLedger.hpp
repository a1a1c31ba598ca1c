// What the time-series sink has in each batch it hands to the sender, so
// that it can answer for the points once the store has answered (or the
// queue dropped them). It works one of two ways, chosen at start:
//
// - The queue counts (another sink records losses: the HDF5 files). A
//   batch's points count as accepted once queued; a batch the queue drops,
//   or the store refuses, becomes losses per job and host, handed to the
//   recording sink (take_losses). The sink then acknowledges nothing: the
//   HDF5 sink's acknowledgements stand for both.
// - The store counts (the time-series sink alone). A sender that asks for
//   acknowledgements is acknowledged up to the seq below which every point
//   of its messages is in the store: acknowledgement waits for the store's
//   2xx answer. A dropped batch's messages are not acknowledged, so their
//   sender resends them; the ledger says which resent messages to write
//   again (wants_again), and nothing is written twice while its batch is on
//   its way. A batch the store refuses (4xx) is acknowledged: sending it
//   again would not change the answer (counted and logged by the sender).
//   A job's summary points in a dropped batch are handed back to be queued
//   again.
//
// Not thread-safe: the sink's one thread calls it.
#pragma once

#include "collector/Sink.hpp"
#include "collector/summary/JobSummary.hpp"
#include "wire/ack.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace colmet::collector::tsdb {

// What became of a batch.
enum class BatchFate { stored, rejected, dropped };

// A job's summary as the sink sends it, kept until its batch is stored.
struct QueuedSummary {
    JobSummary summary;
    std::string user;
    std::vector<std::pair<std::string, std::string>> context_labels;  // as TsdbSink's JobInfo
};

class BatchLedger {
public:
    explicit BatchLedger(bool queue_counts = false) : m_queue_counts(queue_counts) {}
    void set_queue_counts(bool queue_counts) { m_queue_counts = queue_counts; }
    bool queue_counts() const { return m_queue_counts; }

    // The batch being filled (ids start at 1).
    uint64_t current() const { return m_current; }
    // The current batch went to the sender; a new one starts.
    uint64_t seal();

    // `points` of `msg` went into the current batch (0 is fine: a message
    // with nothing to send is accepted as it comes).
    void note(const wire::Message &msg, uint64_t points, int64_t now_ns);
    void note_summary(QueuedSummary summary);
    // A resend (Delivery::resent): true when its points must be written
    // again (its batch was dropped, or the ledger never saw it); false when
    // they are stored or on their way (an acknowledgement is due again).
    bool wants_again(const wire::Message &msg, int64_t now_ns);

    // What became of batch `id`. Summaries of a dropped batch are appended
    // to `again` (the store counts).
    void settle(uint64_t id, BatchFate fate, std::vector<QueuedSummary> &again);

    void take_acks(std::vector<wire::Ack> &out);
    void take_losses(std::vector<SinkLoss> &out);
    // Forget senders silent for `idle_ns` (a later resend is written again).
    void forget_idle(int64_t now_ns, int64_t idle_ns);

    size_t senders() const { return m_senders.size(); }
    size_t batches() const { return m_books.size(); }

private:
    struct Range {  // seqs [lo, hi] of one sender, all in one batch
        uint64_t hi = 0;
        uint64_t batch = 0;
        bool dropped = false;
    };
    struct SenderBook {
        std::map<uint64_t, Range> pending;  // by lo: not yet stored
        bool seen = false;
        uint64_t first_seen = 0;  // nothing below it is acknowledged by this ledger
        uint64_t last_seen = 0;
        uint64_t acked = 0;  // last acknowledgement handed out
        bool acked_any = false;
        bool reack = false;  // a resend of what is stored: say it again
        bool due = false;    // in m_due
        int64_t seen_ns = 0;
    };
    struct Book {
        std::vector<std::string> senders;                     // the store counts
        std::map<std::string, uint64_t, std::less<>> points;  // the queue counts: "<job>\0<host>"
        std::vector<QueuedSummary> summaries;                 // the store counts
    };

    void give_up_below(SenderBook &sender, uint64_t base);
    void mark_due(const std::string &sender);

    bool m_queue_counts;
    uint64_t m_current = 1;
    std::unordered_map<uint64_t, Book> m_books;
    std::unordered_map<std::string, SenderBook> m_senders;
    std::vector<std::string> m_due;  // senders whose acknowledgement may have moved
    std::vector<SinkLoss> m_losses;
    std::string m_key;  // "<job>\0<host>", made without allocating once it is long enough
};

}  // namespace colmet::collector::tsdb
