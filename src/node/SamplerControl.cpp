// Sampler::apply: live reconfiguration requested through the control socket
// or the legacy configure endpoint. Every fallible step (building the new
// perfhw backend, reopening paused counters) runs before anything changes,
// so a rejected request leaves the sampler exactly as it was.
#include "node/Sampler.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "node/NodeOptions.hpp"
#include "node/control/PerfhwController.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

namespace colmet::node {
namespace {

using control::ControlAnswer;
using control::PerfhwAction;
using control::Rejection;

Rejection rejection_for(const Error &e)
{
    switch (e.code()) {
    case Errc::invalid:
    case Errc::parse:
        return Rejection::invalid;
    case Errc::unsupported:
        return Rejection::unsupported;
    default:
        return Rejection::failed;
    }
}

}  // namespace

control::ControlState Sampler::state() const
{
    control::ControlState s;
    s.job_id = m_config.job_id;
    s.period_s = m_config.period_s;
    if (perfhw_index() != static_cast<size_t>(-1)) {
        s.perfhw = m_perfhw_paused ? "paused" : "counting";
        s.perfhw_events = m_config.perfhw_events;
    } else if (m_perfhw) {
        s.perfhw = "waiting";  // for the job's cgroup (relocate_perfhw)
        s.perfhw_events = m_config.perfhw_events;
    }
    s.samples_sent = m_stats.samples;
    s.dropped = m_stats.dropped;
    s.collector = m_config.collector_uri;
    s.delivery = m_outbox ? "acknowledged" : "unacknowledged";
    if (m_outbox) {
        s.acknowledged = m_outbox->stats().acknowledged;
        s.unacknowledged = m_outbox->size();
        s.spooled = m_outbox->spooled();
    }
    return s;
}

control::ControlAnswer Sampler::apply(const control::ControlRequest &r)
{
    auto rejected = [this](Rejection code, std::string reason) {
        if (uint64_t skipped = 0; m_control_log.allow(&skipped))
            spdlog::warn("control: request rejected: {}{}", reason,
                         skipped ? " (" + std::to_string(skipped) + " more not logged)" : std::string());
        ControlAnswer a = ControlAnswer::reject(code, std::move(reason));
        a.state = state();
        return a;
    };
    if (r.job_id && *r.job_id != m_config.job_id)
        return rejected(Rejection::invalid, "this sampler serves job " + m_config.job_id + ", not " + *r.job_id);
    const size_t pi = perfhw_index();
    const bool wants_perfhw = r.perfhw_events.has_value() || r.perfhw != PerfhwAction::none;
    if (wants_perfhw && m_perfhw && pi == static_cast<size_t>(-1))
        return rejected(Rejection::unsupported, "perfhw is waiting for job " + m_config.job_id +
                                                    "'s cgroup: its counters open when the job's first process "
                                                    "is found (or could not be opened there: see the sampler's log)");
    if (wants_perfhw && (pi == static_cast<size_t>(-1) || !m_perfhw))
        return rejected(Rejection::unsupported,
                        "perfhw is not running for job " + m_config.job_id +
                            " (colmet-node was started without --enable-perfhw, or its counters could not be opened at "
                            "start: see its log)");
    if (r.period_s && (!std::isfinite(*r.period_s) || *r.period_s < k_min_period_s || *r.period_s > k_max_period_s))
        return rejected(Rejection::invalid, "sample_period: outside 0.1 .. 3600 s");

    const bool paused_after =
        r.perfhw == PerfhwAction::pause ? true : (r.perfhw == PerfhwAction::resume ? false : m_perfhw_paused);

    // Fallible steps first.
    std::unique_ptr<MetricBackend> rebuilt;
    if (r.perfhw_events && *r.perfhw_events != m_config.perfhw_events) {
        auto b = m_perfhw->build(*r.perfhw_events);
        if (!b)
            return rejected(rejection_for(b.error()), "perfhw events: " + b.error().message());
        rebuilt = std::move(*b);
    }
    if (!rebuilt && m_perfhw_paused && !paused_after) {
        if (auto reopened = m_backends[pi]->resume(); !reopened)
            return rejected(rejection_for(reopened.error()), "resume perfhw: " + reopened.error().message());
    }

    // Nothing fails from here on.
    ControlAnswer a;
    a.accepted = true;
    if (r.period_s && *r.period_s != m_config.period_s) {
        m_config.period_s = *r.period_s;
        m_msg.period_s = *r.period_s;
        // The next sample at the next multiple of the new period: at most one
        // new period away.
        m_next_ns = next_aligned(realtime_ns(), static_cast<int64_t>(std::llround(*r.period_s * 1e9)));
        a.changed.push_back("sample_period");
        spdlog::info("control: sample period now {} s", m_config.period_s);
    }
    if (rebuilt) {
        // The old backend's counters are disabled, reset and closed as it goes.
        m_backends[pi] = std::move(rebuilt);
        m_msg.backends[pi] = block_for(*m_backends[pi]);
        std::fill(m_msg.backends[pi].values.begin(), m_msg.backends[pi].values.end(),
                  std::numeric_limits<double>::quiet_NaN());
        m_config.perfhw_events = *r.perfhw_events;
        if (paused_after)
            m_backends[pi]->pause();
        a.changed.push_back("perfhw_events");
        spdlog::info("control: perfhw events now {}", text::join(m_config.perfhw_events, ","));
    } else if (paused_after && !m_perfhw_paused) {
        m_backends[pi]->pause();
    }
    if (paused_after != m_perfhw_paused) {
        a.changed.push_back(paused_after ? "perfhw_paused" : "perfhw_resumed");
        spdlog::info("control: perfhw counters {}", paused_after ? "released (paused)" : "reopened (resumed)");
    }
    m_perfhw_paused = paused_after;
    if (!r.context.empty()) {
        // Sent with the next message, and kept with the job's own metadata
        // (sent again after a restart of the sampler's delivery).
        for (const auto &item : r.context) {
            auto same = std::find_if(m_config.meta.begin(), m_config.meta.end(),
                                     [&item](const auto &kv) { return kv.first == item.first; });
            if (same != m_config.meta.end())
                same->second = item.second;
            else
                m_config.meta.push_back(item);
            m_pending_meta.push_back(item);
        }
        a.changed.push_back("context");
        spdlog::info("control: job context: {} item(s) added", r.context.size());
    }
    if (r.sample_now) {
        // At most one extra sample per minimum period, however often asked:
        // a request that comes sooner waits for it (at most 0.1 s).
        const int64_t min_gap_ns = static_cast<int64_t>(k_min_period_s * 1e9);
        const int64_t wait_ns = m_msg.time_ns + min_gap_ns - realtime_ns();
        if (wait_ns > 0)
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(wait_ns, min_gap_ns)));
        sample_once(wire::MessageKind::sample);
        send_current();
        a.changed.push_back("sampled");
    }
    a.state = state();
    return a;
}

}  // namespace colmet::node
