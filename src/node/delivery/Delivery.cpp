#include "node/delivery/Delivery.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"

#include <poll.h>

#include <algorithm>
#include <climits>

namespace colmet::node {
namespace {

constexpr int k_send_retry_ms = 100;  // while messages wait for a connection
constexpr int64_t k_max_ack_timeout_ns = int64_t{300} * 1'000'000'000;

}  // namespace

int to_timeout_ms(int64_t wait_ns)
{
    if (wait_ns <= 0)
        return 0;
    int64_t ms = (wait_ns + 999'999) / 1'000'000;
    return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

Delivery::Delivery(Transport &transport, Outbox &outbox, double ack_timeout_s)
    : m_transport(transport), m_outbox(outbox), m_base_timeout_ns(static_cast<int64_t>(ack_timeout_s * 1e9)),
      m_timeout_ns(m_base_timeout_ns)
{
}

void Delivery::pump()
{
    while (OutboxEntry *entry = m_outbox.next()) {
        if (!m_transport.send(entry->bytes))
            return;  // not connected, or ZeroMQ's queue is full: later
        m_outbox.sent();
        if (m_deadline_ns == 0)
            m_deadline_ns = monotonic_ns() + m_timeout_ns;
    }
}

void Delivery::handle(int64_t now_mono_ns)
{
    const TransportEvents events = m_transport.events();
    if (events.acked && m_outbox.acknowledge(*events.acked)) {
        m_timeout_ns = base_timeout_ns();
        m_deadline_ns = m_outbox.empty() ? 0 : now_mono_ns + m_timeout_ns;
    }
    if (events.reconnected && m_outbox.rewind()) {
        // What was on its way over the old connection may be gone.
        spdlog::debug("connected to the collector: sending the {} unacknowledged messages from seq {}", m_outbox.size(),
                      m_outbox.base());
    } else if (m_deadline_ns != 0 && now_mono_ns >= m_deadline_ns && m_outbox.rewind()) {
        spdlog::warn("no acknowledgement from the collector for {} s: sending the {} unacknowledged messages again "
                     "from seq {}",
                     m_timeout_ns / 1'000'000'000, m_outbox.size(), m_outbox.base());
        m_timeout_ns = std::min(m_timeout_ns * 2, k_max_ack_timeout_ns);
        m_deadline_ns = now_mono_ns + m_timeout_ns;
    }
    if (m_outbox.empty())
        m_deadline_ns = 0;
    pump();
}

int Delivery::poll_timeout_ms(int timeout_ms) const
{
    // ZeroMQ says nothing when a connection comes back: try again soon.
    if (!m_outbox.all_sent())
        timeout_ms = std::min(timeout_ms, k_send_retry_ms);
    if (m_deadline_ns != 0)
        timeout_ms = std::min(timeout_ms, to_timeout_ms(m_deadline_ns - monotonic_ns()));
    return timeout_ms;
}

void Delivery::wait(double seconds)
{
    const int64_t until = monotonic_ns() + static_cast<int64_t>(seconds * 1e9);
    const int fd = m_transport.event_fd();
    handle(monotonic_ns());
    for (int64_t now = monotonic_ns(); !m_outbox.empty() && now < until && m_transport.may_answer();
         now = monotonic_ns()) {
        pollfd p{fd, POLLIN, 0};
        ::poll(&p, 1, std::min(k_send_retry_ms, to_timeout_ms(until - now)));
        handle(monotonic_ns());
    }
}

}  // namespace colmet::node
