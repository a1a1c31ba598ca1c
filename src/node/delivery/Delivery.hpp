// Acknowledged delivery's sending side (docs/protocol.md): an outbox
// drained through a transport, sent again from the oldest unacknowledged
// message after a reconnection or when no acknowledgement comes in time
// (the timeout doubling up to 5 minutes while none comes). The sampler runs
// one for its live messages; a spool flush runs one for a spool file.
#pragma once

#include "node/Transport.hpp"
#include "node/delivery/Outbox.hpp"

#include <cstdint>

namespace colmet::node {

class Delivery {
public:
    Delivery(Transport &transport, Outbox &outbox, double ack_timeout_s);

    // Send what the outbox holds unsent, as far as the transport takes it.
    void pump();
    // Take in what the transport reports (acknowledgements, a
    // reconnection), send again when a timeout is due, then pump().
    void handle(int64_t now_mono_ns);
    // `timeout_ms` shortened to when handle() has work: a retry while
    // messages wait to be sent, the acknowledgement deadline.
    int poll_timeout_ms(int timeout_ms) const;
    // Until everything is acknowledged, `seconds` passed, or the collector
    // is known to be away (connecting failed): then it is not worth waiting.
    void wait(double seconds);

private:
    int64_t base_timeout_ns() const { return m_base_timeout_ns; }

    Transport &m_transport;
    Outbox &m_outbox;
    int64_t m_base_timeout_ns;
    int64_t m_deadline_ns = 0;  // CLOCK_MONOTONIC: resend if no acknowledgement by then (0: none due)
    int64_t m_timeout_ns;       // the current timeout, doubled after each fruitless resend
};

// Milliseconds for poll() from nanoseconds, rounded up (0 when due).
int to_timeout_ms(int64_t wait_ns);

}  // namespace colmet::node
