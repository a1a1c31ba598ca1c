#include "node/Sampler.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"
#include "node/JobCgroups.hpp"
#include "node/control/ControlServer.hpp"
#include "node/control/LegacyControl.hpp"
#include "node/control/PerfhwController.hpp"
#include "wire/codec.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>
#include <sys/signalfd.h>
#include <unistd.h>

namespace colmet::node {
namespace {

}  // namespace

Sampler::Sampler(SamplerConfig config, std::vector<std::unique_ptr<MetricBackend>> backends,
                 std::unique_ptr<Transport> transport)
    : m_config(std::move(config)), m_backends(std::move(backends)), m_transport(std::move(transport))
{
    m_msg.host = m_config.host;
    m_msg.job_id = m_config.job_id;
    m_msg.sender = m_config.host + "/" + std::to_string(getpid()) + "/" + std::to_string(realtime_ns());
    m_msg.period_s = m_config.period_s;
    if (m_transport->acknowledged()) {
        m_msg.version = wire::k_acked_protocol_version;
        m_msg.ack = 1;
        m_transport->listen_for_acks(m_msg.sender);
        std::unique_ptr<Spool> spool;
        if (!m_config.spool_dir.empty()) {
            SpoolHeader header = m_config.spool_target;
            header.job_id = m_config.job_id;
            header.sender = m_msg.sender;
            spool = std::make_unique<Spool>(m_config.spool_dir, std::move(header), m_config.spool_limits);
        }
        const std::string job = m_config.job_id;
        m_outbox = std::make_unique<Outbox>(m_config.outbox_bytes, std::move(spool),
                                            [job](const std::string &text) { spdlog::warn("job {}: {}", job, text); });
        m_delivery = std::make_unique<Delivery>(*m_transport, *m_outbox, m_config.ack_timeout_s);
    }
    for (const auto &backend : m_backends)
        m_msg.backends.push_back(block_for(*backend));
}

wire::BackendBlock Sampler::block_for(const MetricBackend &backend)
{
    wire::BackendBlock blk;
    blk.name = backend.name();
    blk.scope = backend.scope();
    blk.metrics = backend.metrics();
    blk.values.assign(blk.metrics.size(), 0.0);
    blk.status.reserve(256);
    return blk;
}

Sampler::~Sampler() = default;

void Sampler::set_control_server(std::unique_ptr<control::ControlServer> server) { m_control = std::move(server); }
void Sampler::set_legacy_control(std::unique_ptr<control::LegacyControl> legacy) { m_legacy = std::move(legacy); }
void Sampler::set_perfhw_controller(std::unique_ptr<control::PerfhwController> controller)
{
    m_perfhw = std::move(controller);
}

void Sampler::set_job_cgroups(std::unique_ptr<JobCgroups> cgroups, size_t job_backends, JobBackendBuilder builder)
{
    m_cgroups = std::move(cgroups);
    m_job_backends = std::min(job_backends, m_backends.size());
    m_builder = std::move(builder);
}

void Sampler::rebuild_job_backends()
{
    JobBackends fresh = m_builder(m_cgroups->paths());
    const auto first = static_cast<std::ptrdiff_t>(m_job_backends);
    m_backends.erase(m_backends.begin(), m_backends.begin() + first);
    m_msg.backends.erase(m_msg.backends.begin(), m_msg.backends.begin() + first);
    std::vector<wire::BackendBlock> blocks;
    for (const auto &backend : fresh.backends)
        blocks.push_back(block_for(*backend));
    m_job_backends = fresh.backends.size();
    m_backends.insert(m_backends.begin(), std::make_move_iterator(fresh.backends.begin()),
                      std::make_move_iterator(fresh.backends.end()));
    m_msg.backends.insert(m_msg.backends.begin(), std::make_move_iterator(blocks.begin()),
                          std::make_move_iterator(blocks.end()));
    const auto dirs = m_cgroups->paths().directories();
    if (!dirs.empty())
        m_config.cgroup_dir = dirs.front().string();
    m_pending_meta.emplace_back("cgroups", m_cgroups->describe());
    for (auto &kv : fresh.meta)
        m_pending_meta.push_back(std::move(kv));
    spdlog::info("job {}: sampling {} ({} cgroup backends)", m_config.job_id, m_cgroups->describe(), m_job_backends);
    relocate_perfhw();
}

void Sampler::relocate_perfhw()
{
    if (!m_perfhw)
        return;
    const size_t pi = perfhw_index();
    const bool running = pi != static_cast<size_t>(-1);
    auto moved =
        m_perfhw->relocate(m_cgroups->paths(), m_config.perfhw_events, running ? m_backends[pi].get() : nullptr);
    if (!moved) {
        spdlog::warn("job {}: perfhw{}: {}", m_config.job_id, running ? " stays where it was" : " not available",
                     moved.error().message());
        return;
    }
    if (!*moved)
        return;  // already counting there
    if (m_perfhw_paused)
        (*moved)->pause();
    wire::BackendBlock blk = block_for(**moved);
    if (running) {
        m_backends[pi] = std::move(*moved);
        m_msg.backends[pi] = std::move(blk);
    } else {
        // After the job's cgroup backends, where NodeMain puts it at start.
        const auto at = static_cast<std::ptrdiff_t>(m_job_backends);
        m_backends.insert(m_backends.begin() + at, std::move(*moved));
        m_msg.backends.insert(m_msg.backends.begin() + at, std::move(blk));
    }
}

void Sampler::refresh_cgroups()
{
    if (m_cgroups && m_cgroups->refresh())
        rebuild_job_backends();
}

void Sampler::check_cgroups()
{
    if (!m_cgroups)
        return;
    m_cgroups->check();
    const auto &empty = m_cgroups->empty_dirs();
    for (size_t i = 0; i < m_job_backends && !empty.empty(); ++i)
        for (const auto &dir : m_backends[i]->cgroup_dirs())
            if (std::find(empty.begin(), empty.end(), dir) != empty.end()) {
                auto &status = m_msg.backends[i].status;
                status += (status.empty() ? "" : "; ") + std::string("empty cgroup: ") + dir.string() +
                          " holds none of the job's processes";
            }
    if (auto warning = m_cgroups->take_warning()) {
        spdlog::warn("job {}: {}", m_config.job_id, *warning);
        m_pending_meta.emplace_back("cgroup_warning", m_cgroups->warnings());
    }
}

size_t Sampler::perfhw_index() const
{
    for (size_t i = 0; i < m_backends.size(); ++i)
        if (m_backends[i]->live_controlled())
            return i;
    return static_cast<size_t>(-1);
}

void Sampler::sample_once(wire::MessageKind kind)
{
    refresh_cgroups();
    m_msg.kind = kind;
    m_msg.time_ns = realtime_ns();
    for (size_t i = 0; i < m_backends.size(); ++i) {
        auto &blk = m_msg.backends[i];
        if (m_backends[i]->reads_message())
            continue;  // below, from the others' values
        if (m_perfhw_paused && m_backends[i]->live_controlled()) {
            // Released for the user's own profiler: nothing counted, nothing claimed.
            std::fill(blk.values.begin(), blk.values.end(), std::numeric_limits<double>::quiet_NaN());
            blk.status.assign("paused");
            continue;
        }
        m_backends[i]->sample(blk.values);
        blk.status.assign(m_backends[i]->status());
    }
    check_cgroups();
    // Metadata travels with the next message: job_start's, and what is learnt
    // later (the job's cgroups once found, a warning). Found in job_start's
    // own sample, the job's cgroups name "cpus" again: the latest stands
    // (twice, encode() refused the message and job_start was lost).
    m_msg.meta.clear();
    m_msg.meta.swap(m_pending_meta);
    wire::keep_latest_meta(m_msg.meta);
    for (size_t i = 0; i < m_backends.size(); ++i)
        if (m_backends[i]->reads_message()) {
            auto &blk = m_msg.backends[i];
            m_backends[i]->sample_from(m_msg, blk.values);
            blk.status.assign(m_backends[i]->status());
        }
}

void Sampler::send_current()
{
    m_msg.dropped = m_unreported_drops;
    if (m_outbox) {
        m_msg.base = m_outbox->base();
        OutboxEntry entry;
        entry.seq = m_msg.seq;
        entry.time_ns = m_msg.time_ns;
        if (auto r = wire::encode(m_msg, entry.bytes, &entry.base_at); !r) {
            ++m_stats.encode_errors;
            return;
        }
        m_outbox->push(std::move(entry));
        m_stats.dropped = m_outbox->stats().overflowed;  // given up by the bound, seen by the control status too
        ++m_stats.samples;
        ++m_msg.seq;
        m_unreported_drops = 0;
        m_msg.meta.clear();
        m_delivery->pump();
        return;
    }
    if (auto r = wire::encode(m_msg, m_buffer); !r) {
        ++m_stats.encode_errors;
        return;
    }
    if (m_transport->send(m_buffer)) {
        ++m_stats.samples;
        ++m_msg.seq;
        m_unreported_drops = 0;
        m_msg.meta.clear();
    } else {
        ++m_stats.dropped;
        ++m_unreported_drops;
        // Keep the metadata for the next message.
        for (auto &kv : m_msg.meta)
            m_pending_meta.push_back(std::move(kv));
        m_msg.meta.clear();
    }
}

void Sampler::step(wire::MessageKind kind)
{
    sample_once(kind);
    send_current();
    handle_transport(monotonic_ns());
}

void Sampler::handle_transport(int64_t now_mono_ns)
{
    if (m_delivery)
        m_delivery->handle(now_mono_ns);
    else
        (void)m_transport->events();  // logs failed handshakes
}

namespace {

// A signalfd for SIGTERM and SIGINT; the caller has blocked both.
int open_signalfd()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int64_t period_ns_of(double period_s) { return static_cast<int64_t>(std::llround(period_s * 1e9)); }

}  // namespace

int Sampler::poll_timeout_ms(bool legacy_pending) const
{
    if (legacy_pending)
        return 0;
    int timeout = to_timeout_ms(m_next_ns - realtime_ns());
    if (m_delivery)
        timeout = m_delivery->poll_timeout_ms(timeout);
    if (m_control) {
        int64_t deadline = m_control->next_deadline();
        if (deadline != INT64_MAX)
            timeout = std::min(timeout, to_timeout_ms(deadline - monotonic_ns()));
    }
    if (perfhw_awaits_directory())
        timeout = std::min(timeout, k_directory_poll_ms);
    return timeout;
}

bool Sampler::perfhw_awaits_directory() const
{
    return m_perfhw && m_cgroups && m_cgroups->awaiting_directory() && perfhw_index() == static_cast<size_t>(-1);
}

int Sampler::run()
{
    int sfd = open_signalfd();
    if (sfd < 0)
        spdlog::error("signalfd: {}; SIGTERM will not be seen", std::strerror(errno));

    // job_start carries the metadata; its values are the first sample.
    m_pending_meta.insert(m_pending_meta.begin(), m_config.meta.begin(), m_config.meta.end());
    sample_once(wire::MessageKind::job_start);
    send_current();

    const control::ControlServer::Handler handler = [this](const control::ControlRequest &r) { return apply(r); };
    std::vector<pollfd> fds;
    fds.reserve(16);
    m_next_ns = next_aligned(realtime_ns(), period_ns_of(m_config.period_s));
    int ended_by = 0;
    uint64_t reported_drops = 0;
    bool legacy_pending = false;
    for (;;) {
        fds.clear();
        fds.push_back({sfd, POLLIN, 0});  // poll() ignores a negative fd
        fds.push_back({m_transport->event_fd(), POLLIN, 0});
        if (m_legacy)
            fds.push_back({m_legacy->fd(), POLLIN, 0});
        size_t control_at = fds.size();
        if (m_control)
            m_control->poll_fds(fds);
        int n = ::poll(fds.data(), fds.size(), poll_timeout_ms(legacy_pending));
        if (n > 0 && (fds[0].revents & POLLIN)) {
            signalfd_siginfo info{};
            if (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                ended_by = static_cast<int>(info.ssi_signo);
                spdlog::info("received signal {}: final sample and job end", ended_by);
                break;
            }
        }
        if (m_control)
            m_control->handle(std::span<const pollfd>(fds).subspan(control_at), monotonic_ns(), handler);
        // ZMQ_FD is edge-triggered: look at the sockets after every wake-up.
        handle_transport(monotonic_ns());
        if (m_legacy)
            legacy_pending = m_legacy->handle(handler);
        // perf counts from its opening, not from the directory's making: the
        // counters open as soon as the job's directory exists, before its
        // first task runs, not at the next sample.
        if (perfhw_awaits_directory())
            refresh_cgroups();
        int64_t now = realtime_ns();
        if (now < m_next_ns)
            continue;
        if (!m_config.cgroup_dir.empty() && !std::filesystem::exists(m_config.cgroup_dir)) {
            // Nothing left to read: the job end repeats the last values read.
            spdlog::info("cgroup {} is gone: the job has ended", m_config.cgroup_dir);
            m_msg.kind = wire::MessageKind::job_end;
            send_current();
            if (sfd >= 0)
                ::close(sfd);
            finish();
            return 0;
        }
        sample_once(wire::MessageKind::sample);
        send_current();
        if (m_stats.dropped != reported_drops) {
            // At most one line per period, only while drops happen.
            spdlog::warn("{}: {} messages dropped so far", drop_reason(), m_stats.dropped);
            reported_drops = m_stats.dropped;
        }
        m_next_ns = next_aligned(now, period_ns_of(m_config.period_s));
    }
    sample_once(wire::MessageKind::job_end);
    send_current();
    if (sfd >= 0)
        ::close(sfd);
    finish();
    return ended_by;
}

void Sampler::finish()
{
    if (m_delivery) {
        // Wait for the last acknowledgements, unless the collector is known
        // to be away: the job's end never waits for it. What is left goes
        // to the spool for a later flush.
        m_delivery->wait(m_config.ack_wait_s);
        m_stats.spooled = m_outbox->spool_all();
        m_stats.dropped = m_outbox->stats().overflowed;
        m_stats.unacknowledged = m_outbox->size() - m_stats.spooled;
    }
    log_end();
}

const char *Sampler::drop_reason() const
{
    if (!m_outbox)
        return "collector queue full";
    if (m_outbox->spool())
        return "outbox and spool full (the collector is away)";
    return "outbox full (the collector is away; no spool)";
}

void Sampler::log_end() const
{
    if (!m_outbox) {
        spdlog::info("job {} ended: {} messages sent, {} dropped", m_config.job_id, m_stats.samples, m_stats.dropped);
        return;
    }
    const OutboxStats &o = m_outbox->stats();
    const auto line = fmt::format("job {} ended: {} messages sent, {} acknowledged, {} resent, {} spooled, {} "
                                  "dropped, {} unacknowledged",
                                  m_config.job_id, m_stats.samples, o.acknowledged, o.resent, m_stats.spooled,
                                  m_stats.dropped, m_stats.unacknowledged);
    const char *why = m_transport->may_answer() ? "no answer within ack-wait" : "unreachable";
    if (m_stats.unacknowledged > 0)
        spdlog::warn("{}: the collector ({}) did not confirm them and they could not be spooled; they may be "
                     "missing from the job's file",
                     line, why);
    else if (m_stats.spooled > 0)
        spdlog::warn("{}: the collector ({}) did not confirm them; the spool {} keeps them until a flush (colmet-job "
                     "flush-spool, or the next job's start or stop)",
                     line, why, m_outbox->spool()->path().string());
    else
        spdlog::info("{}", line);
}

}  // namespace colmet::node
