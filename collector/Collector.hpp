// The collector's core: receive frames, decode and validate them, track
// sequence numbers, hand valid messages to the sinks. Bad input is counted,
// logged (rate-limited) and dropped; nothing stops the loop but a signal.
#pragma once

#include "collector/CollectorStats.hpp"
#include "collector/SequenceTracker.hpp"
#include "collector/Sink.hpp"
#include "common/log.hpp"
#include "wire/message.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace colmet::collector {

class Collector {
public:
    explicit Collector(std::vector<std::unique_ptr<Sink>> sinks);

    // One received frame (more_parts: the frame was part of a multi-frame message).
    void handle_frame(const char *data, size_t size, bool more_parts, int64_t now_mono_ns);
    void tick(int64_t now_mono_ns);
    void flush_all(int64_t now_mono_ns);
    void close_all();

    const CollectorStats &stats() const { return m_stats; }

private:
    void reject(uint64_t &counter, const std::string &why);

    std::vector<std::unique_ptr<Sink>> m_sinks;
    SequenceTracker m_sequences;
    CollectorStats m_stats;
    wire::Message m_msg;
    log::RateLimiter m_reject_log{10, std::chrono::seconds(10)};
    bool m_in_multipart = false;
};

struct ListenOptions {
    std::string bind_uri = "tcp://0.0.0.0:5556";
    int hwm = 1000;
    // On SIGHUP, after everything buffered was written: re-open the log file
    // (log rotation). May be empty.
    std::function<void()> reopen_log;
};

// Bind a PULL socket and run the collector until SIGTERM or SIGINT (which,
// with SIGHUP, the caller has blocked). SIGHUP writes everything buffered,
// keeps the files open and re-opens the log file. Returns 0, or 69 when the
// socket cannot be bound.
int serve(Collector &collector, const ListenOptions &options);

} // namespace colmet::collector
