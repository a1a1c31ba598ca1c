// The collector's socket loop: ZeroMQ PULL plus its ZAP handler and monitor
// sockets and a signalfd, one thread.
#include "collector/serve.hpp"

#include "auth/CurveKeys.hpp"
#include "collector/security/ZapHandler.hpp"
#include "common/clock.hpp"
#include "common/log.hpp"
#include "wire/ack.hpp"
#include "wire/message.hpp"

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include <csignal>
#include <cstring>
#include <optional>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace colmet::collector {
namespace {

constexpr const char *k_monitor_endpoint = "inproc://colmet.collector.monitor";
constexpr const char *k_ack_monitor_endpoint = "inproc://colmet.collector.ack-monitor";
// A subscription frame: a flag byte and the topic, a sender id (under 300
// bytes); anything longer is refused by ZeroMQ before it takes memory.
constexpr int64_t k_max_subscription_bytes = 1024;
constexpr int k_ack_heartbeat_ms = 30'000;
constexpr int64_t k_max_handshake_ms = 10'000;
constexpr int k_handshake_failures =
    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

// The node keys, and the ZAP handler that uses them; absent without CURVE.
struct Security {
    ZapHandler zap;
    zmq::socket_t socket;
};

std::shared_ptr<const auth::NodeKeys> load_node_keys(const std::string &dir)
{
    auto keys = auth::NodeKeys::load(dir);
    if (!keys) {
        spdlog::critical("node keys: {}", keys.error().message());
        return nullptr;
    }
    spdlog::info("node keys: {} key(s) from {} file(s) in {}", keys->keys(), keys->files(), dir);
    return std::make_shared<const auth::NodeKeys>(std::move(*keys));
}

void answer_zap(Security &security)
{
    for (;;) {
        std::vector<std::string> request;
        zmq::message_t part;
        do {
            auto got = security.socket.recv(part, zmq::recv_flags::dontwait);
            if (!got)
                return;
            request.emplace_back(static_cast<const char *>(part.data()), part.size());
        } while (part.more());
        auto reply = security.zap.answer(request);
        for (size_t i = 0; i < reply.size(); ++i)
            security.socket.send(zmq::buffer(reply[i]),
                                 i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
}

// Monitor events: a 6-byte frame (event, value = the descriptor), then the
// endpoint. `subscribers`: the acknowledgement socket, whose peers never
// send a message (see AckPublisher).
void read_monitor(zmq::socket_t &monitor, ConnectionGuard &guard, log::RateLimiter &cut_log, bool subscribers)
{
    for (;;) {
        zmq::message_t event, endpoint;
        if (!monitor.recv(event, zmq::recv_flags::dontwait))
            return;
        if (event.more())
            (void)monitor.recv(endpoint, zmq::recv_flags::dontwait);
        if (event.size() < 6)
            continue;
        uint16_t kind = 0;
        uint32_t value = 0;
        std::memcpy(&kind, event.data(), 2);
        std::memcpy(&value, static_cast<const char *>(event.data()) + 2, 4);
        const int fd = static_cast<int>(value);
        if (kind == ZMQ_EVENT_ACCEPTED) {
            const int64_t now = monotonic_ns();
            const int cut = guard.accepted(fd, now);
            if (cut >= 0) {
                uint64_t suppressed = 0;
                if (cut_log.allow(&suppressed))
                    spdlog::warn("{} connections are open{} (max-connections): cutting {}{}",
                                 guard.limits().max_connections, subscribers ? " to the acknowledgement socket" : "",
                                 cut == fd     ? "the new one"
                                 : subscribers ? "the oldest still in its handshake"
                                               : "the oldest that never carried a message",
                                 suppressed ? " (" + std::to_string(suppressed) + " more cut, not logged)" : "");
                ::shutdown(cut, SHUT_RDWR);
            }
        } else if (kind == ZMQ_EVENT_DISCONNECTED || kind == ZMQ_EVENT_CLOSED) {
            guard.closed(fd);
        } else if (kind & k_handshake_failures) {
            guard.handshake_failed();
        }
    }
}

// The acknowledgement socket: a PUB that nodes' SUB sockets connect to.
// Publishing never blocks: a subscriber that lags loses acknowledgements,
// and its sampler sends again what it missed (the collector then answers
// the duplicates). Its connections are kept within max-connections by a
// guard of their own, so that subscribers cannot use up the descriptors
// the receiving socket and the HDF5 files need. A subscriber never sends:
// it is protected once it outlived the handshake time (so its handshake,
// CURVE included, succeeded); at the limit a connection still in its
// handshake makes room first, then the new one is cut. None is cut as
// idle: ZeroMQ's heartbeats close the connections of dead peers.
struct AckPublisher {
    zmq::socket_t socket;
    ConnectionGuard guard;
    zmq::socket_t monitor;
    std::vector<wire::Ack> due;
    uint64_t sent = 0;

    void publish(Collector &collector)
    {
        collector.take_acks(due);
        for (const auto &ack : due) {
            const std::string frame = wire::encode_ack(ack.sender, ack.seq);
            try {
                if (socket.send(zmq::buffer(frame), zmq::send_flags::dontwait))
                    ++sent;
            } catch (const zmq::error_t &) {
            }
        }
        due.clear();
    }
};

std::string connection_summary(const ConnectionGuard &guard, const AckPublisher *acks, const Security *security)
{
    const auto &s = guard.stats();
    std::string text = "connections: " + std::to_string(guard.open()) + " open, " + std::to_string(s.accepted) +
                       " accepted, cut " + std::to_string(s.over_limit) + " over the limit and " +
                       std::to_string(s.idle) + " idle; " + std::to_string(s.handshake_failed) + " failed handshakes";
    if (acks)
        text += "; acknowledgement subscribers: " + std::to_string(acks->guard.open()) + " open, " +
                std::to_string(acks->guard.stats().accepted) + " accepted, " +
                std::to_string(acks->guard.stats().over_limit) + " cut over the limit";
    if (security)
        text += "; node keys: " + std::to_string(security->zap.stats().accepted) + " accepted, " +
                std::to_string(security->zap.stats().refused) + " refused";
    return text;
}

}  // namespace

// The CURVE side (--curve-secret-key): the collector's secret key, the
// nodes' keys, the ZAP handler bound before any socket that uses it. False
// when a key cannot be read (logged).
bool start_security(zmq::context_t &ctx, const ListenOptions &options, Collector &collector,
                    std::optional<Security> &security, std::string &secret_key)
{
    auto pair = auth::read_key_pair_file(options.curve_secret_key);
    if (!pair) {
        spdlog::critical("collector key: {}", pair.error().message());
        return false;
    }
    secret_key = pair->secret_key;
    auto keys = load_node_keys(options.nodes_dir);
    if (!keys)
        return false;
    collector.set_node_keys(keys);
    security.emplace(Security{ZapHandler(keys), zmq::socket_t(ctx, zmq::socket_type::rep)});
    security->socket.set(zmq::sockopt::linger, 0);
    security->socket.bind(k_zap_endpoint);
    return true;
}

// Bind a listening socket with what both of ours share: the handshake's
// time limit, CURVE with `secret_key` (when not empty) and a monitor on
// `monitor_endpoint` (connections accepted and closed, failed handshakes).
// Throws zmq::error_t.
void listen_watched(zmq::socket_t &socket, zmq::socket_t &monitor, const char *monitor_endpoint, const std::string &uri,
                    int64_t handshake_ms, const std::string &secret_key)
{
    socket.set(zmq::sockopt::handshake_ivl, static_cast<int>(handshake_ms));
    if (!secret_key.empty()) {
        socket.set(zmq::sockopt::curve_server, true);
        socket.set(zmq::sockopt::curve_secretkey, secret_key);
        socket.set(zmq::sockopt::zap_domain, "colmet");
    }
    if (zmq_socket_monitor(socket.handle(), monitor_endpoint,
                           ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED | k_handshake_failures) != 0)
        throw zmq::error_t();
    monitor.connect(monitor_endpoint);
    socket.bind(uri);
}

// SIGTERM, SIGINT and SIGHUP as a descriptor to poll (blocked by main);
// -1 on failure.
int stop_and_hup_signals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

// SIGHUP: log rotation, new node keys, or a check point: write what is
// buffered, reopen the log, reload the nodes' keys (the ones in force stay
// when the new ones cannot be read), keep going.
void on_sighup(Collector &collector, const ListenOptions &options, Security *security)
{
    collector.flush_all(monotonic_ns());
    if (options.reopen_log)
        options.reopen_log();
    if (security) {
        if (auto keys = load_node_keys(options.nodes_dir)) {
            security->zap.set_keys(keys);
            collector.set_node_keys(keys);
        } else {
            spdlog::error("SIGHUP: keeping the {} node key(s) in force", security->zap.keys()->keys());
        }
    }
    spdlog::info("received SIGHUP: buffered rows written, log file re-opened{}; {}{}",
                 security ? ", node keys reloaded" : "", collector.stats().to_string(), collector.sinks_text());
}

// The acknowledgement publisher (--zeromq-ack-bind-uri): a PUB socket that
// pings its subscribers, bounded as the receiving one. False when it cannot
// listen (logged).
bool start_ack_publisher(zmq::context_t &ctx, const ListenOptions &options, int64_t handshake_ms,
                         const std::string &secret_key, std::optional<AckPublisher> &acks)
{
    acks.emplace(AckPublisher{zmq::socket_t(ctx, zmq::socket_type::pub),
                              ConnectionGuard(options.connections),
                              zmq::socket_t(ctx, zmq::socket_type::pair),
                              {},
                              0});
    try {
        acks->socket.set(zmq::sockopt::linger, 200);
        acks->socket.set(zmq::sockopt::sndhwm, 10000);
        acks->socket.set(zmq::sockopt::maxmsgsize, k_max_subscription_bytes);
        // A node that died (power, panic, partition) leaves no FIN: a PUB
        // never notices it without a ping its peer must answer.
        acks->socket.set(zmq::sockopt::heartbeat_ivl, k_ack_heartbeat_ms);
        acks->socket.set(zmq::sockopt::heartbeat_timeout, 3 * k_ack_heartbeat_ms);
        listen_watched(acks->socket, acks->monitor, k_ack_monitor_endpoint, options.ack_bind_uri, handshake_ms,
                       secret_key);
    } catch (const zmq::error_t &e) {
        spdlog::critical("cannot publish acknowledgements on {}: {}", options.ack_bind_uri, e.what());
        return false;
    }
    return true;
}

// True when `socket` has something to read within `ms` milliseconds.
bool readable_within(zmq::socket_t &socket, int ms)
{
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    try {
        zmq::poll(&item, 1, std::chrono::milliseconds(ms));
    } catch (const zmq::error_t &) {
        return false;
    }
    return (item.revents & ZMQ_POLLIN) != 0;
}

// Read what is queued on the receiving socket, at most `limit` frames, into
// the collector (with the sender's CURVE key when `curve`); how many.
int drain_frames(zmq::socket_t &socket, zmq::message_t &frame, ConnectionGuard &guard, Collector &collector, bool curve,
                 int limit)
{
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
        const int64_t now = monotonic_ns();
        guard.message_from(zmq_msg_get(frame.handle(), ZMQ_SRCFD), now);
        const char *key = curve ? zmq_msg_gets(frame.handle(), "User-Id") : nullptr;
        collector.handle_frame(static_cast<const char *>(frame.data()), frame.size(), frame.more(), now,
                               key ? std::string_view(key) : std::string_view());
    }
    return n;
}

// When the serving loop last ticked and last logged its numbers.
struct LoopClocks {
    int64_t last_tick = 0;
    int64_t last_stats_log = 0;
};

// After each poll: every 200 ms the collector's tick, idle connections cut
// and subscribers past their handshake protected; the acknowledgements due;
// every minute a line of numbers.
void housekeeping(Collector &collector, ConnectionGuard &guard, AckPublisher *acks, const Security *security,
                  int64_t handshake_ms, LoopClocks &clocks)
{
    const int64_t now = monotonic_ns();
    if (now - clocks.last_tick >= 200'000'000) {
        collector.tick(now);
        for (int fd : guard.idle(now))
            ::shutdown(fd, SHUT_RDWR);
        if (acks)
            acks->guard.protect_older_than(now - (handshake_ms + 1000) * 1'000'000);
        clocks.last_tick = now;
    }
    if (acks)
        acks->publish(collector);
    if (now - clocks.last_stats_log >= int64_t{60} * 1'000'000'000) {
        spdlog::info("{}; {}{}", collector.stats().to_string(), connection_summary(guard, acks, security),
                     collector.sinks_text());
        clocks.last_stats_log = now;
    }
}

int serve(Collector &collector, const ListenOptions &options)
{
    zmq::context_t ctx(1);
    std::optional<Security> security;
    std::string secret_key;  // empty: no CURVE
    if (!options.curve_secret_key.empty() && !start_security(ctx, options, collector, security, secret_key))
        return 78;

    // A connection that never completes its greeting holds a descriptor:
    // ZeroMQ closes it after this long.
    const int64_t handshake_ms = std::min(k_max_handshake_ms, options.connections.idle_timeout_ns / 1'000'000);
    zmq::socket_t socket(ctx, zmq::socket_type::pull);
    ConnectionGuard guard(options.connections);
    log::RateLimiter cut_log{10, std::chrono::seconds(60)};
    zmq::socket_t monitor(ctx, zmq::socket_type::pair);
    try {
        socket.set(zmq::sockopt::rcvhwm, options.hwm);
        socket.set(zmq::sockopt::linger, 0);
        // A frame above the protocol's limit is refused by ZeroMQ itself,
        // before it is received whole: the peer is disconnected.
        socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(wire::k_max_message_bytes));
        listen_watched(socket, monitor, k_monitor_endpoint, options.bind_uri, handshake_ms, secret_key);
    } catch (const zmq::error_t &e) {
        spdlog::critical("cannot listen on {}: {}", options.bind_uri, e.what());
        return 69;
    }
    std::optional<AckPublisher> acks;
    if (!options.ack_bind_uri.empty() && !start_ack_publisher(ctx, options, handshake_ms, secret_key, acks))
        return 69;
    secret_key.assign(secret_key.size(), '\0');

    const int sfd = stop_and_hup_signals();
    if (sfd < 0) {
        spdlog::critical("signalfd: {}", std::strerror(errno));
        return 70;
    }
    spdlog::info("listening on {} ({}), {}", options.bind_uri,
                 security ? "CURVE: only the keys of " + options.nodes_dir : std::string("no authentication"),
                 acks ? "acknowledgements on " + options.ack_bind_uri : std::string("no acknowledgements"));

    zmq::message_t frame;
    auto drain = [&](int limit) { return drain_frames(socket, frame, guard, collector, security.has_value(), limit); };

    LoopClocks clocks{monotonic_ns(), monotonic_ns()};
    for (;;) {
        // The sockets that may be absent go last, so that the count leaves them out.
        zmq::pollitem_t items[5] = {
            {socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, sfd, ZMQ_POLLIN, 0}, {monitor.handle(), 0, ZMQ_POLLIN, 0}};
        size_t count = 3;
        const size_t ack_item = acks ? count++ : 0;
        if (acks)
            items[ack_item] = {acks->monitor.handle(), 0, ZMQ_POLLIN, 0};
        const size_t zap_item = security ? count++ : 0;
        if (security)
            items[zap_item] = {security->socket.handle(), 0, ZMQ_POLLIN, 0};
        try {
            zmq::poll(items, count, std::chrono::milliseconds(200));
        } catch (const zmq::error_t &e) {
            if (e.num() != EINTR)
                spdlog::error("poll: {}", e.what());
        }
        if (items[2].revents & ZMQ_POLLIN)
            read_monitor(monitor, guard, cut_log, false);
        if (acks && (items[ack_item].revents & ZMQ_POLLIN))
            read_monitor(acks->monitor, acks->guard, cut_log, true);
        if (security && (items[zap_item].revents & ZMQ_POLLIN))
            answer_zap(*security);
        // Bounded, so that ticks, handshakes and signals are still seen under load.
        if (items[0].revents & ZMQ_POLLIN)
            drain(10000);
        if (items[1].revents & ZMQ_POLLIN) {
            signalfd_siginfo info{};
            if (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                if (info.ssi_signo == SIGHUP) {
                    on_sighup(collector, options, security ? &*security : nullptr);
                    continue;
                }
                spdlog::info("received signal {}: storing what is queued, then closing every file", info.ssi_signo);
                break;
            }
        }
        housekeeping(collector, guard, acks ? &*acks : nullptr, security ? &*security : nullptr, handshake_ms, clocks);
    }
    // Messages already on their way (a sampler's job end sent just before
    // the signal) are still stored: read until the socket has been quiet
    // for 100 ms, at most 2 s.
    const int64_t stop_by = monotonic_ns() + 2'000'000'000;
    while (monotonic_ns() < stop_by && readable_within(socket, 100) && drain(10000) > 0) {
    }
    collector.close_all();
    if (acks)
        acks->publish(collector);  // what the last flushes stored (the socket lingers 200 ms)
    zmq_socket_monitor(socket.handle(), nullptr, 0);
    if (acks)
        zmq_socket_monitor(acks->socket.handle(), nullptr, 0);
    ::close(sfd);
    spdlog::info("stopped: {}; {}{}", collector.stats().to_string(),
                 connection_summary(guard, acks ? &*acks : nullptr, security ? &*security : nullptr),
                 collector.sinks_text());
    return 0;
}

}  // namespace colmet::collector
