// Where the collector puts validated messages. One sink per output (HDF5
// files, stdout); the collector core decodes, validates and tracks sequence
// numbers, then hands every message to each sink.
#pragma once

#include "wire/message.hpp"

#include <cstdint>
#include <string>

namespace colmet::collector {

// What the core learned about a message's delivery.
struct Delivery {
    // Messages of this sender that never arrived before this one (a gap in
    // seq), plus the sender's own count of messages it could not queue.
    uint64_t lost = 0;
    // CLOCK_MONOTONIC when the message was received.
    int64_t received_mono_ns = 0;
    // The core had no earlier seq of this sender (the first message heard
    // since the collector started, or the sender was forgotten), so `lost`
    // counts no gap: a sink that stored the sender's earlier messages counts
    // the gap from the last seq it stored.
    bool sender_new = false;
};

class Sink {
public:
    virtual ~Sink() = default;

    // A decoded, valid message. Must not throw; a failure is logged and
    // counted by the sink itself.
    virtual void consume(const wire::Message &msg, const Delivery &delivery) noexcept = 0;

    // Called at least once a second with CLOCK_MONOTONIC: flush what is due,
    // close files of idle jobs.
    virtual void tick(int64_t now_mono_ns) noexcept = 0;

    // Write everything buffered now, keeping files open (SIGHUP).
    virtual void flush_all(int64_t now_mono_ns) noexcept = 0;

    // Flush and close everything (SIGTERM, end of run).
    virtual void close_all() noexcept = 0;

    // The sink's counters in a few words for the collector's log lines
    // ("" for none).
    virtual std::string stats_text() const { return {}; }
};

}  // namespace colmet::collector
