// Where the collector puts validated messages. One sink per output (HDF5
// files, stdout); the collector core decodes, validates and tracks sequence
// numbers, then hands every message to each sink.
#pragma once

#include "wire/ack.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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
    // The core had received this seq of this sender, or a later one: a
    // resend (acknowledged delivery) or a replay. A sink that keeps no
    // record of what it stored should skip it.
    bool resent = false;
};

// Points another sink could not deliver, for the sink that records losses
// in the job's own record (the time-series sink's dropped points, in the
// job's HDF5 file).
struct SinkLoss {
    std::string job_id;
    std::string host;
    uint64_t points = 0;
};

// A job whose summary was written for the first time (at its end, or after
// its silence), for the site's on-job-end command (notify/JobEndCommand.hpp).
struct EndedJob {
    std::string job_id;
    std::string user;  // the job's user (metadata "user"); empty when unknown
    std::string file;  // where its record is
    std::string json;  // its summary (notify/SummaryJson.hpp)
};
using EndedJobListener = std::function<void(EndedJob)>;

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

    // Acknowledged delivery (docs/protocol.md). A sink that stores messages
    // durably says so, and then answers for them: take_acks() appends, for
    // each sender that asked (wire::wants_ack), the seq up to which
    // everything is stored (or given up by the sender) since the last call.
    // Without such a sink the core acknowledges what it received.
    virtual bool acknowledges() const { return false; }
    virtual void take_acks(std::vector<wire::Ack> & /*out*/) {}

    // Losses of one sink recorded by another. A sink that keeps a record
    // per job (HDF5) says so and takes the others' losses; a sink that
    // queues (time-series) is told at start whether such a sink exists (it
    // may then count what it queued as accepted, and hand out what it later
    // dropped), and acknowledges itself when none does.
    virtual bool records_losses() const { return false; }
    virtual void record_losses(const std::vector<SinkLoss> & /*losses*/, int64_t /*now_mono_ns*/) noexcept {}
    virtual void set_loss_recorder(bool /*present*/) {}
    virtual void take_losses(std::vector<SinkLoss> & /*out*/) {}
    // A sink that writes each job's summary says so, and calls the listener
    // once per job, when it first writes it.
    virtual bool announces_ended_jobs() const { return false; }
    virtual void set_ended_job_listener(const EndedJobListener & /*listener*/) {}
};

}  // namespace colmet::collector
