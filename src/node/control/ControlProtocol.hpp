// The control protocol between colmet-ctl and a job's colmet-node
// (docs/control.md is the reference): over the job's Unix socket, one
// request frame and one answer frame per connection. A frame is a 4-byte
// big-endian length (1 .. k_max_frame_bytes) followed by that many bytes of
// one msgpack map. Everything here is pure: no I/O, every size bounded.
#pragma once

#include "common/result.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colmet::node::control {

inline constexpr uint32_t k_control_version = 1;
inline constexpr size_t k_frame_header_bytes = 4;
inline constexpr size_t k_max_frame_bytes = size_t{64} * 1024;  // request or answer body
inline constexpr size_t k_max_reason_length = 1024;

enum class PerfhwAction : uint8_t { none, pause, resume };

// What colmet-ctl asks for. Every field is optional; an empty request only
// asks for the settings in force (colmet-ctl --status).
struct ControlRequest {
    // The job the client means. Job ids that sanitize to the same socket
    // name ("a:b", "a_b") cannot reach the wrong sampler: it refuses a
    // request naming another job. Optional on the wire; colmet-ctl sends it.
    std::optional<std::string> job_id;
    std::optional<double> period_s;                         // 0.1 .. 3600
    std::optional<std::vector<std::string>> perfhw_events;  // split and checked, see decode_request
    PerfhwAction perfhw = PerfhwAction::none;
    // Take and send one sample now, after the other changes (the Slurm
    // plugin asks for it when a step ends, before Slurm removes the cgroups).
    bool sample_now = false;
    // The job's context, added to its metadata (scheduler/JobContext.hpp's
    // keys; the Slurm plugin sends what a step learns). Root only: the
    // server refuses it from the job's owner.
    std::vector<std::pair<std::string, std::string>> context;

    bool operator==(const ControlRequest &) const = default;
};

// The settings in force, sent with every answer to an allowed peer.
struct ControlState {
    std::string job_id;
    double period_s = 0;
    std::string perfhw = "off";  // "off" (not running), "waiting" (for the job's cgroup), "counting" or "paused"
    std::vector<std::string> perfhw_events;
    uint64_t samples_sent = 0;
    uint64_t dropped = 0;
    std::string collector;  // the --zeromq-uri in use
    // Delivery (empty and 0 from a sampler that does not say):
    // "acknowledged", or "unacknowledged" (protocol version 1).
    std::string delivery;
    uint64_t acknowledged = 0;    // messages the collector acknowledged
    uint64_t unacknowledged = 0;  // held by the sampler now, in memory or in the node spool
    uint64_t spooled = 0;         // of which in the node spool

    bool operator==(const ControlState &) const = default;
};

// Why a request was rejected (the "code" of an answer).
enum class Rejection : uint8_t { invalid, unsupported, failed, permission, busy, timeout };
const char *to_string(Rejection r);

struct ControlAnswer {
    bool accepted = false;
    Rejection code = Rejection::invalid;  // when rejected
    std::string reason;                   // when rejected
    std::vector<std::string> changed;     // when accepted: "sample_period", "perfhw_events", "perfhw_paused",
                                          // "perfhw_resumed", "sampled"
    std::optional<ControlState> state;    // absent in answers to a refused peer

    static ControlAnswer reject(Rejection code, std::string reason);
    bool operator==(const ControlAnswer &) const = default;
};

// Bodies (msgpack maps, without the frame header).
std::string encode_request(const ControlRequest &request);
// Strict: unknown or repeated keys, wrong types, v != 1, a context that is
// not a map of known keys to valid values (sched::parse_context_item), or
// holds more than sched::context_keys().size() entries, a period outside
// 0.1..3600 s or not finite, an empty or oversized event list, a bad or
// duplicate event name, an unknown perfhw action are Errc::invalid (or
// Errc::parse for bytes that are not one msgpack map) naming the field.
// Event names may be given as several strings or comma/space separated in
// one, as with --perfhw-list; they are returned one per element. Whether a
// name is a known event is checked by the sampler (resolve_event).
Result<ControlRequest> decode_request(std::string_view body);

std::string encode_answer(const ControlAnswer &answer);
Result<ControlAnswer> decode_answer(std::string_view body);

// The original colmet-rust configure message (a msgpack map str -> str with
// "sample_period", a decimal number of seconds, and "perfhw_metrics", comma-
// separated names) as a request. Either key may be missing, not both; any
// other key, a non-string value or a bad number is an error.
Result<ControlRequest> decode_legacy_configure(std::string_view body);

// 4-byte big-endian length + body. The body must be 1..k_max_frame_bytes.
std::string frame(std::string_view body);

// Collects one frame from a byte stream, never reading past it.
class FrameReader {
public:
    enum class Status : uint8_t { incomplete, complete, bad_length };

    // How many more bytes this frame needs (0 once complete or bad).
    size_t wanted() const;
    // Append bytes: those of this frame are used, never one past its end
    // (callers that read a socket ask for wanted() bytes at a time, so as
    // not to take the next frame's); returns the status.
    Status feed(std::string_view bytes);
    Status status() const { return m_status; }
    // The declared body length (valid once the header is in).
    uint32_t declared() const { return m_declared; }
    std::string_view body() const;

private:
    std::string m_buf;
    uint32_t m_declared = 0;
    Status m_status = Status::incomplete;
};

// job_file(dir, job_id, JobFile::control_socket): <dir>/<stem>.ctl (common/names.hpp)
std::filesystem::path control_socket_path(const std::filesystem::path &dir, std::string_view job_id);

}  // namespace colmet::node::control
