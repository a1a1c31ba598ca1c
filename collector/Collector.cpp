#include "collector/Collector.hpp"

#include "wire/codec.hpp"

#include <spdlog/spdlog.h>

namespace colmet::collector {

std::string CollectorStats::to_string() const
{
    return "received " + std::to_string(received) + ", stored " + std::to_string(accepted) + ", rejected " +
           std::to_string(rejected) + " (invalid " + std::to_string(invalid) + ", oversized " +
           std::to_string(oversized) + ", multipart " + std::to_string(multipart) + "), lost " + std::to_string(lost);
}

Collector::Collector(std::vector<std::unique_ptr<Sink>> sinks) : m_sinks(std::move(sinks)) {}

void Collector::reject(uint64_t &counter, const std::string &why)
{
    ++counter;
    ++m_stats.rejected;
    uint64_t suppressed = 0;
    if (m_reject_log.allow(&suppressed)) {
        if (suppressed)
            spdlog::warn("rejected message: {} ({} more rejects not logged)", why, suppressed);
        else
            spdlog::warn("rejected message: {}", why);
    }
}

void Collector::handle_frame(const char *data, size_t size, bool more_parts, int64_t now_mono_ns)
{
    ++m_stats.received;
    // Every frame of a multi-frame message is dropped; the message counts once.
    if (more_parts || m_in_multipart) {
        if (!m_in_multipart)
            reject(m_stats.multipart, "multi-frame message (colmet messages are one frame)");
        m_in_multipart = more_parts;
        return;
    }
    if (size > wire::k_max_message_bytes) {
        reject(m_stats.oversized, "frame of " + std::to_string(size) + " bytes exceeds the " +
                                      std::to_string(wire::k_max_message_bytes) + "-byte limit");
        return;
    }
    if (auto r = wire::decode(data, size, m_msg); !r) {
        reject(m_stats.invalid, r.error().message());
        return;
    }
    Delivery delivery;
    delivery.received_mono_ns = now_mono_ns;
    delivery.lost = m_sequences.observe(m_msg.sender, m_msg.seq, now_mono_ns) + m_msg.dropped;
    m_stats.lost += delivery.lost;
    ++m_stats.accepted;
    for (auto &sink : m_sinks)
        sink->consume(m_msg, delivery);
}

void Collector::tick(int64_t now_mono_ns)
{
    for (auto &sink : m_sinks)
        sink->tick(now_mono_ns);
}

void Collector::flush_all(int64_t now_mono_ns)
{
    for (auto &sink : m_sinks)
        sink->flush_all(now_mono_ns);
}

void Collector::close_all()
{
    for (auto &sink : m_sinks)
        sink->close_all();
}

} // namespace colmet::collector
