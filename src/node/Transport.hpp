// How the sampler hands encoded messages to the network. send() never
// blocks: when the queue towards the collector is full the message is
// refused. Without acknowledgements the sampler counts it as dropped; with
// them (an ack endpoint configured) a refused message stays in the
// sampler's outbox (delivery/Outbox.hpp) and is sent later.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace colmet::node {

// What happened on the way back from the collector since the last look.
struct TransportEvents {
    std::optional<uint64_t> acked;  // the highest acknowledgement received
    bool reconnected = false;       // a connection to the collector was (re)made: what was in flight may be lost
};

class Transport {
public:
    virtual ~Transport() = default;
    // true when queued; false when the bounded queue is full or, with
    // acknowledgements, no collector is connected.
    virtual bool send(std::string_view bytes) noexcept = 0;

    // Acknowledged delivery (all no-ops on a transport without it).
    virtual bool acknowledged() const noexcept { return false; }
    // Receive the acknowledgements of this sender; call before sending.
    virtual void listen_for_acks(std::string_view /*sender*/) {}
    // A descriptor to poll: readable when events() may have news (-1: none).
    virtual int event_fd() const noexcept { return -1; }
    virtual TransportEvents events() noexcept { return {}; }
    // Worth waiting for an acknowledgement (as of the last send() or
    // events()): a connection to the collector is up, or being made and
    // not refused yet. False once connecting failed (the collector is
    // down) until a connection succeeds.
    virtual bool may_answer() const noexcept { return true; }
};

struct ZmqOptions {
    std::string uri = "tcp://127.0.0.1:5556";
    int hwm = 1000;       // messages queued at most while the collector is slow or away
    int linger_ms = 500;  // how long close() may wait to deliver what is queued
    // The collector's ack endpoint (ZeroMQ SUB connects here); empty: no
    // acknowledgements (protocol version 1 messages).
    std::string ack_uri;
    // CURVE (both or neither): the collector's public-key file and this
    // node's key-pair file, made by colmet-keygen.
    std::string curve_server_key;
    std::string curve_secret_key;
};

// A ZeroMQ PUSH socket connected to the collector (a CURVE client when the
// keys are given; a key that cannot be read is an error here).
Result<std::unique_ptr<Transport>> make_zmq_transport(const ZmqOptions &options);

// The options for one job when `uri` lists several collectors: `uri` becomes
// the job's collector (common/collectors.hpp), and `curve_server_key` its
// key file when that lists one file per collector, comma-separated in the
// same order (a single file serves every collector). An error when either
// list is malformed or the counts differ. `ack_uri`, when "" (the default
// rule, common/collectors.hpp) or a list in the same order as `uri`, becomes
// the chosen collector's; "none" becomes "" (no acknowledgements).
Result<ZmqOptions> choose_collector(const ZmqOptions &options, std::string_view job_id);

}  // namespace colmet::node
