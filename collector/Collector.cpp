#include "collector/Collector.hpp"

#include "common/clock.hpp"
#include "wire/codec.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

namespace colmet::collector {
namespace {

// ", refused N [clock a, sequence b]": the admission refusals, by reason
// when there are any.
std::string refused_text(const CollectorStats &s)
{
    const std::pair<const char *, uint64_t> reasons[] = {{"clock", s.refused_clock},
                                                         {"sequence", s.refused_sequence},
                                                         {"job_start", s.refused_job_restart},
                                                         {"hosts_per_job", s.refused_hosts_per_job},
                                                         {"jobs_per_host", s.refused_jobs_per_host},
                                                         {"new_jobs", s.refused_new_jobs}};
    uint64_t total = 0;
    std::string detail;
    for (const auto &[name, n] : reasons) {
        total += n;
        if (n)
            detail += (detail.empty() ? " [" : ", ") + std::string(name) + " " + std::to_string(n);
    }
    return ", refused " + std::to_string(total) + (detail.empty() ? "" : detail + "]");
}

uint64_t &refused_counter(CollectorStats &s, Refusal reason)
{
    switch (reason) {
    case Refusal::clock:
        return s.refused_clock;
    case Refusal::sequence:
        return s.refused_sequence;
    case Refusal::job_restart:
        return s.refused_job_restart;
    case Refusal::hosts_per_job:
        return s.refused_hosts_per_job;
    case Refusal::jobs_per_host:
        return s.refused_jobs_per_host;
    case Refusal::new_jobs:
        break;
    }
    return s.refused_new_jobs;
}

}  // namespace

std::string CollectorStats::to_string() const
{
    return "received " + std::to_string(received) + ", stored " + std::to_string(accepted) + ", rejected " +
           std::to_string(rejected) + " (invalid " + std::to_string(invalid) + ", oversized " +
           std::to_string(oversized) + ", multipart " + std::to_string(multipart) + ", unauthorized " +
           std::to_string(unauthorized) + refused_text(*this) + "), lost " + std::to_string(lost);
}

std::string Collector::sinks_text() const
{
    std::string out;
    for (const auto &sink : m_sinks)
        if (auto text = sink->stats_text(); !text.empty())
            out += "; " + text;
    return out;
}

Collector::Collector(std::vector<std::unique_ptr<Sink>> sinks, AdmissionLimits limits)
    : m_sinks(std::move(sinks)), m_admission(limits)
{
    const bool recorder =
        std::any_of(m_sinks.begin(), m_sinks.end(), [](const auto &s) { return s->records_losses(); });
    for (const auto &sink : m_sinks)
        sink->set_loss_recorder(recorder);
    // Acknowledgements stand for every sink: the one that acknowledges
    // answers for the others (they count what they queue as accepted, and
    // their later losses are recorded by it).
    const auto acknowledging =
        std::count_if(m_sinks.begin(), m_sinks.end(), [](const auto &s) { return s->acknowledges(); });
    if (acknowledging > 1)
        throw std::logic_error("more than one sink acknowledges");
    m_sinks_acknowledge = acknowledging == 1;
}

void Collector::route_losses(int64_t now_mono_ns)
{
    m_losses.clear();
    for (auto &sink : m_sinks)
        sink->take_losses(m_losses);
    if (m_losses.empty())
        return;
    for (auto &sink : m_sinks)
        if (sink->records_losses())
            sink->record_losses(m_losses, now_mono_ns);
}

void Collector::take_acks(std::vector<wire::Ack> &out)
{
    if (m_sinks_acknowledge) {
        for (auto &sink : m_sinks)
            sink->take_acks(out);
        return;
    }
    for (auto &[sender, seq] : m_received_acks)
        out.push_back({sender, seq});
    m_received_acks.clear();
}

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

void Collector::handle_frame(const char *data, size_t size, bool more_parts, int64_t now_mono_ns, std::string_view key)
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
    if (m_node_keys && !m_node_keys->allows(key, m_msg.host)) {
        reject(m_stats.unauthorized, "host '" + m_msg.host + "' (job " + m_msg.job_id + ") sent under key " +
                                         (key.empty() ? std::string("(none)") : std::string(key)) +
                                         ", which is not registered for that host");
        return;
    }
    if (auto refused = m_admission.admit(m_msg, now_mono_ns, realtime_ns())) {
        reject(refused_counter(m_stats, refused->reason), refused->why);
        return;
    }
    Delivery delivery;
    delivery.received_mono_ns = now_mono_ns;
    const uint64_t gap =
        m_sequences.observe(m_msg.sender, m_msg.seq, now_mono_ns, &delivery.sender_new, &delivery.resent);
    // A sender that is acknowledged resends what is missing: a gap here is
    // not a loss (the sinks count what the sender gave up, from `base`).
    const bool acked = wire::wants_ack(m_msg);
    delivery.lost = (acked ? 0 : gap) + m_msg.dropped;
    m_stats.lost += delivery.lost;
    if (acked && !m_sinks_acknowledge) {
        uint64_t &last = m_received_acks[m_msg.sender];
        last = std::max(last, m_msg.seq);
    }
    ++m_stats.accepted;
    for (auto &sink : m_sinks)
        sink->consume(m_msg, delivery);
}

void Collector::tick(int64_t now_mono_ns)
{
    for (auto &sink : m_sinks)
        sink->tick(now_mono_ns);
    route_losses(now_mono_ns);
}

void Collector::flush_all(int64_t now_mono_ns)
{
    for (auto &sink : m_sinks)
        sink->flush_all(now_mono_ns);
}

void Collector::close_all()
{
    // The sinks that queue first: what they drop at the end is recorded by
    // the others before these close.
    for (auto &sink : m_sinks)
        if (!sink->records_losses())
            sink->close_all();
    route_losses(monotonic_ns());
    for (auto &sink : m_sinks)
        if (sink->records_losses())
            sink->close_all();
}

}  // namespace colmet::collector
