#include "node/Sampler.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"
#include "wire/codec.hpp"

#include <cerrno>
#include <cstring>
#include <csignal>
#include <filesystem>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace colmet::node {

Sampler::Sampler(SamplerConfig config, std::vector<std::unique_ptr<MetricBackend>> backends,
                 std::unique_ptr<Transport> transport)
    : m_config(std::move(config)), m_backends(std::move(backends)), m_transport(std::move(transport))
{
    m_msg.host = m_config.host;
    m_msg.job_id = m_config.job_id;
    m_msg.sender = m_config.host + "/" + std::to_string(getpid()) + "/" + std::to_string(realtime_ns());
    m_msg.period_s = m_config.period_s;
    m_msg.backends.resize(m_backends.size());
    for (size_t i = 0; i < m_backends.size(); ++i) {
        auto &blk = m_msg.backends[i];
        blk.name = m_backends[i]->name();
        blk.scope = m_backends[i]->scope();
        blk.metrics = m_backends[i]->metrics();
        blk.values.assign(blk.metrics.size(), 0.0);
        blk.status.reserve(256);
    }
}

void Sampler::sample_once(wire::MessageKind kind)
{
    m_msg.kind = kind;
    m_msg.time_ns = realtime_ns();
    for (size_t i = 0; i < m_backends.size(); ++i) {
        auto &blk = m_msg.backends[i];
        m_backends[i]->sample(blk.values);
        blk.status.assign(m_backends[i]->status());
    }
}

void Sampler::send_current()
{
    m_msg.dropped = m_unreported_drops;
    if (auto r = wire::encode(m_msg, m_buffer); !r) {
        ++m_stats.encode_errors;
        return;
    }
    if (m_transport->send(m_buffer)) {
        ++m_stats.samples;
        ++m_msg.seq;
        m_unreported_drops = 0;
    } else {
        ++m_stats.dropped;
        ++m_unreported_drops;
    }
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

} // namespace

int Sampler::run()
{
    const auto period_ns = static_cast<int64_t>(m_config.period_s * 1e9);
    int sfd = open_signalfd();
    if (sfd < 0)
        spdlog::error("signalfd: {}; SIGTERM will not be seen", std::strerror(errno));

    // job_start carries the metadata; its values are the first sample.
    m_msg.meta = m_config.meta;
    sample_once(wire::MessageKind::job_start);
    send_current();
    m_msg.meta.clear();

    int64_t next = next_aligned(realtime_ns(), period_ns);
    int ended_by = 0;
    uint64_t reported_drops = 0;
    for (;;) {
        int64_t wait_ns = next - realtime_ns();
        int timeout_ms = wait_ns > 0 ? static_cast<int>((wait_ns + 999'999) / 1'000'000) : 0;
        pollfd pfd{sfd, POLLIN, 0};
        int n = ::poll(&pfd, sfd >= 0 ? 1 : 0, timeout_ms);
        if (n > 0 && (pfd.revents & POLLIN)) {
            signalfd_siginfo info{};
            if (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                ended_by = static_cast<int>(info.ssi_signo);
                spdlog::info("received signal {}: final sample and job end", ended_by);
                break;
            }
        }
        int64_t now = realtime_ns();
        if (now < next)
            continue;
        if (!m_config.cgroup_dir.empty() && !std::filesystem::exists(m_config.cgroup_dir)) {
            // Nothing left to read: the job end repeats the last values read.
            spdlog::info("cgroup {} is gone: the job has ended", m_config.cgroup_dir);
            m_msg.kind = wire::MessageKind::job_end;
            send_current();
            if (sfd >= 0)
                ::close(sfd);
            log_end();
            return 0;
        }
        sample_once(wire::MessageKind::sample);
        send_current();
        if (m_stats.dropped != reported_drops) {
            // At most one line per period, only while drops happen.
            spdlog::warn("collector queue full: {} messages dropped so far", m_stats.dropped);
            reported_drops = m_stats.dropped;
        }
        next = next_aligned(now, period_ns);
    }
    sample_once(wire::MessageKind::job_end);
    send_current();
    if (sfd >= 0)
        ::close(sfd);
    log_end();
    return ended_by;
}

void Sampler::log_end() const
{
    spdlog::info("job {} ended: {} messages sent, {} dropped", m_config.job_id, m_stats.samples, m_stats.dropped);
}

} // namespace colmet::node
