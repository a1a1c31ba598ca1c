// The messages colmet-node sends to colmet-collector (protocol versions 1
// and 2; 2 adds acknowledged delivery).
// docs/protocol.md is the reference for the bytes on the wire.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace colmet::wire {

// Versions a receiver speaks: 1, and 2 (acknowledged delivery: `ack`, `base`).
inline constexpr uint32_t k_min_protocol_version = 1;
inline constexpr uint32_t k_protocol_version = 2;
inline constexpr uint32_t k_acked_protocol_version = 2;

// Bounds the decoder enforces (and the encoder respects).
inline constexpr size_t k_max_message_bytes = 1 << 20;  // one ZeroMQ frame
inline constexpr size_t k_max_backends = 64;
inline constexpr size_t k_max_metrics_per_backend = 1024;
inline constexpr size_t k_max_meta_entries = 64;
inline constexpr size_t k_max_name_length = 128;  // job, host, sender, metric names
inline constexpr size_t k_max_backend_name_length = 64;
inline constexpr size_t k_max_unit_length = 16;
inline constexpr size_t k_max_meta_key_length = 64;
inline constexpr size_t k_max_text_length = 1024;  // meta values, backend status

enum class MessageKind : uint8_t { sample, job_start, job_end };
enum class MetricKind : uint8_t { counter, gauge };
enum class Scope : uint8_t { job, node };

const char *to_string(MessageKind kind);
const char *to_string(MetricKind kind);
const char *to_string(Scope scope);

// A metric's self-description. Names are "<lower_snake_case>", unique within
// their backend; units are SI-style symbols ("s", "B", "J", "degC", "1").
struct MetricDescriptor {
    std::string name;
    std::string unit;
    MetricKind kind = MetricKind::gauge;

    bool operator==(const MetricDescriptor &) const = default;
};

// One backend's part of a sample: descriptors and values in the same order.
// A value that could not be read is NaN (sent as msgpack nil).
struct BackendBlock {
    std::string name;
    Scope scope = Scope::job;
    std::vector<MetricDescriptor> metrics;
    std::vector<double> values;
    std::string status;  // empty when all is well; else why values are missing
    // The msgpack bytes of `metrics` as received, never changed once made:
    // set by decode(), which skips decoding descriptors whose bytes equal the
    // previous message's in the same slot and then keeps the same pointer,
    // so that the collector matches segments by comparing pointers (one set
    // of bytes serves every job whose samplers send the same descriptors).
    // Null in blocks built in memory; whoever changes `metrics` of a decoded
    // block must reset it.
    std::shared_ptr<const std::string> metrics_wire;
};

struct Message {
    uint32_t version = k_min_protocol_version;  // k_acked_protocol_version when asking for acknowledgements
    MessageKind kind = MessageKind::sample;
    std::string host;
    std::string job_id;
    std::string sender;  // identifies one sampler process; seq counts per sender
    uint64_t seq = 0;
    int64_t time_ns = 0;   // when the values were read (CLOCK_REALTIME)
    uint64_t dropped = 0;  // messages this sender could not queue since the previous one
    double period_s = 0;   // sampling period in force (0 = not stated)
    // Version 2: ack = 1 asks the collector to acknowledge this sender's
    // messages; base = the lowest seq the sender still holds for resending
    // (below it, what the receiver lacks will never come). Version 1: ack is
    // reserved and ignored, base absent.
    uint64_t ack = 0;
    uint64_t base = 0;
    std::vector<std::pair<std::string, std::string>> meta;  // job_start: user, cgroup, ...
    std::vector<BackendBlock> backends;
};

inline bool is_missing(double v) { return std::isnan(v); }

inline bool wants_ack(const Message &msg) { return msg.version >= k_acked_protocol_version && msg.ack != 0; }

// Metadata gathered for one message may name a key twice (job_start's
// "cpus", then the "cpus" of the job's cgroups found in the same sample),
// which encode() refuses: keep each key once, at its last value, in the
// order of the last occurrences.
inline void keep_latest_meta(std::vector<std::pair<std::string, std::string>> &meta)
{
    for (size_t i = meta.size(); i-- > 0;)
        for (size_t j = i; j-- > 0;)
            if (meta[j].first == meta[i].first) {
                meta.erase(meta.begin() + static_cast<std::ptrdiff_t>(j));
                --i;
            }
}

}  // namespace colmet::wire
