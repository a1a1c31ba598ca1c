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
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        spdlog::critical("signalfd: {}", std::strerror(errno));
        return 70;
    }
    spdlog::info("listening on {}", options.bind_uri);

    zmq::message_t frame;
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
        if (items[1].revents & ZMQ_POLLIN) {
            signalfd_siginfo info{};
            if (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                spdlog::info("received signal {}: flushing and closing every file", info.ssi_signo);
                break;
            }
        }
        if (items[0].revents & ZMQ_POLLIN) {
            // Drain what is queued, bounded so that ticks still happen.
            for (int i = 0; i < 10000; ++i) {
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
    collector.close_all();
    ::close(sfd);
    spdlog::info("stopped: {}", collector.stats().to_string());
    return 0;
}

} // namespace colmet::collector
