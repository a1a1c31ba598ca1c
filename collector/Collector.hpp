// The collector's core: receive frames, decode and validate them, apply the
// admission checks (Admission.hpp), track sequence numbers, hand valid
// messages to the sinks. Bad input is counted, logged (rate-limited) and
// dropped; nothing stops the loop but a signal.
#pragma once

#include "auth/NodeKeys.hpp"
#include "collector/Admission.hpp"
#include "collector/CollectorStats.hpp"
#include "collector/SequenceTracker.hpp"
#include "collector/Sink.hpp"
#include "common/log.hpp"
#include "wire/message.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace colmet::collector {

class Collector {
public:
    explicit Collector(std::vector<std::unique_ptr<Sink>> sinks, AdmissionLimits limits = {});

    // One received frame (more_parts: the frame was part of a multi-frame
    // message). `key`: the sender's CURVE public key (Z85, ZeroMQ's User-Id),
    // empty on an unauthenticated socket.
    void handle_frame(const char *data, size_t size, bool more_parts, int64_t now_mono_ns, std::string_view key = {});

    // With node keys, every message must come under a key registered for
    // its host (or it is rejected and counted as unauthorized); without, no
    // check (a loopback-only or explicitly unauthenticated collector).
    void set_node_keys(std::shared_ptr<const auth::NodeKeys> keys) { m_node_keys = std::move(keys); }
    void tick(int64_t now_mono_ns);
    void flush_all(int64_t now_mono_ns);
    void close_all();

    // Acknowledgements due (acknowledged delivery), appended to out: from
    // the sinks that store durably, or, without one, for every message
    // received that asked for them.
    void take_acks(std::vector<wire::Ack> &out);

    const CollectorStats &stats() const { return m_stats; }
    // The sinks' stats_text(), each after "; " (for the log lines).
    std::string sinks_text() const;

private:
    void reject(uint64_t &counter, const std::string &why);
    void route_losses(int64_t now_mono_ns);

    std::vector<std::unique_ptr<Sink>> m_sinks;
    std::shared_ptr<const auth::NodeKeys> m_node_keys;
    Admission m_admission;  // after decoding (and authentication), before sequence tracking
    SequenceTracker m_sequences;
    CollectorStats m_stats;
    wire::Message m_msg;
    bool m_sinks_acknowledge = false;
    std::unordered_map<std::string, uint64_t> m_received_acks;  // without such a sink: sender -> highest seq
    std::vector<SinkLoss> m_losses;                             // scratch for route_losses()
    log::RateLimiter m_reject_log{10, std::chrono::seconds(10)};
    bool m_in_multipart = false;
};

}  // namespace colmet::collector
