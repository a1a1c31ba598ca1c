// The collector's socket loop: ZeroMQ PULL plus a signalfd, one thread.
#include "collector/Collector.hpp"

#include "common/clock.hpp"

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include <csignal>
#include <cstring>
#include <sys/signalfd.h>
#include <unistd.h>

namespace colmet::collector {

int serve(Collector &collector, const ListenOptions &options)
{
    zmq::context_t ctx(1);
    zmq::socket_t socket(ctx, zmq::socket_type::pull);
    try {
        socket.set(zmq::sockopt::rcvhwm, options.hwm);
        socket.set(zmq::sockopt::linger, 0);
        // Frames this large are cut off by ZeroMQ itself (the peer is
        // disconnected); frames above the protocol limit but below this are
        // received, counted and rejected.
        socket.set(zmq::sockopt::maxmsgsize, int64_t{16} << 20);
        socket.bind(options.bind_uri);
    } catch (const zmq::error_t &e) {
        spdlog::critical("cannot listen on {}: {}", options.bind_uri, e.what());
        return 69;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        spdlog::critical("signalfd: {}", std::strerror(errno));
        return 70;
    }
    spdlog::info("listening on {}", options.bind_uri);

    zmq::message_t frame;
    // Read what is queued, at most `limit` frames; returns how many.
    auto drain = [&](int limit) {
        int n = 0;
        for (; n < limit; ++n) {
            zmq::recv_result_t got;
            try {
                got = socket.recv(frame, zmq::recv_flags::dontwait);
            } catch (const zmq::error_t &e) {
                spdlog::error("receive: {}", e.what());
                break;
            }
            if (!got)
                break;
            collector.handle_frame(static_cast<const char *>(frame.data()), frame.size(), frame.more(),
                                   monotonic_ns());
        }
        return n;
    };

    int64_t last_tick = monotonic_ns();
    int64_t last_stats_log = last_tick;
    for (;;) {
        zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, sfd, ZMQ_POLLIN, 0}};
        try {
            zmq::poll(items, 2, std::chrono::milliseconds(200));
        } catch (const zmq::error_t &e) {
            if (e.num() != EINTR)
                spdlog::error("poll: {}", e.what());
        }
        // Bounded, so that ticks and signals are still seen under load.
        if (items[0].revents & ZMQ_POLLIN)
            drain(10000);
        if (items[1].revents & ZMQ_POLLIN) {
            signalfd_siginfo info{};
            if (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                if (info.ssi_signo == SIGHUP) {
                    // Log rotation or a check point: write what is buffered,
                    // keep going.
                    collector.flush_all(monotonic_ns());
                    if (options.reopen_log)
                        options.reopen_log();
                    spdlog::info("received SIGHUP: buffered rows written, log file re-opened; {}",
                                 collector.stats().to_string());
                    continue;
                }
                spdlog::info("received signal {}: storing what is queued, then closing every file", info.ssi_signo);
                break;
            }
        }
        int64_t now = monotonic_ns();
        if (now - last_tick >= 200'000'000) {
            collector.tick(now);
            last_tick = now;
        }
        if (now - last_stats_log >= int64_t{60} * 1'000'000'000) {
            spdlog::info("{}", collector.stats().to_string());
            last_stats_log = now;
        }
    }
    // Messages already on their way (a sampler's job end sent just before
    // the signal) are still stored: read until the socket has been quiet
    // for 100 ms, at most 2 s.
    int64_t stop_by = monotonic_ns() + 2'000'000'000;
    while (monotonic_ns() < stop_by) {
        zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
        try {
            zmq::poll(&item, 1, std::chrono::milliseconds(100));
        } catch (const zmq::error_t &) {
        }
        if (!(item.revents & ZMQ_POLLIN) || drain(10000) == 0)
            break;
    }
    collector.close_all();
    ::close(sfd);
    spdlog::info("stopped: {}", collector.stats().to_string());
    return 0;
}

} // namespace colmet::collector
