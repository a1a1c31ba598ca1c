// How the sampler hands encoded messages to the network. send() never
// blocks: when the queue towards the collector is full the message is
// refused. Without acknowledgements the sampler counts it as dropped; with
// them (an ack endpoint configured) a refused message stays in the
// sampler's outbox (delivery/Outbox.hpp) and is sent later.
#pragma once

#include <cstdint>
#include <optional>
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

}  // namespace colmet::node
