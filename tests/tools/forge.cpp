// colmet-forge: what a hostile user on a node could send to a collector,
// for the security tests (not installed). It speaks ZeroMQ like colmet-node
// (PUSH), with or without CURVE keys, and sends well-formed colmet messages
// with whatever host, job, sequence and values it is told, or raw frames,
// or just holds idle TCP connections.
//
//   colmet-forge --uri tcp://127.0.0.1:5556 --host node042 --job 77 --kind job_end
//   colmet-forge --uri ... --jobs 3000 --kind job_start          # job ids forge-0 .. forge-2999
//   colmet-forge --uri ... --backends 38 --metrics 1024 --count 250 --jobs 250
//   colmet-forge --uri ... --raw-bytes 15000000 --count 60
//   colmet-forge --uri ... --idle-connections 3000 --hold 20      # raw TCP, no greeting
//   colmet-forge --uri ... --idle-zmq 1000 --hold 20              # ZeroMQ connections, no message
//   colmet-forge --uri ... --idle-sub 1000 --hold 20              # SUB connections (acknowledgement socket)
//   colmet-forge --uri ... --probe                               # prints "sent <realtime ns>"
#include "auth/CurveKeys.hpp"
#include "common/clock.hpp"
#include "wire/codec.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace colmet;

namespace {

struct Options {
    std::string uri;
    std::string server_key, secret_key;
    std::string host = "node042", job = "77", sender, kind = "sample";
    long count = 1, jobs = 0, backends = 1, metrics = 4;
    unsigned long long seq = 0, dropped = 0;
    double value = 1, time_offset_s = 0, hold_s = 0, period_s = 1;
    long raw_bytes = -1, idle_connections = 0, idle_zmq = 0, idle_sub = 0;
    int linger_ms = 30000;  // how long to wait at exit for the collector to take what is queued
    std::vector<std::pair<std::string, std::string>> meta;
};

[[noreturn]] void usage(const char *why)
{
    std::fprintf(stderr, "colmet-forge: %s (see the comment at the top of tests/tools/forge.cpp)\n", why);
    std::exit(64);
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        if (a == "--uri")
            o.uri = next();
        else if (a == "--server-key")
            o.server_key = next();
        else if (a == "--secret-key")
            o.secret_key = next();
        else if (a == "--host")
            o.host = next();
        else if (a == "--job")
            o.job = next();
        else if (a == "--sender")
            o.sender = next();
        else if (a == "--kind")
            o.kind = next();
        else if (a == "--count")
            o.count = std::stol(next());
        else if (a == "--jobs")
            o.jobs = std::stol(next());
        else if (a == "--backends")
            o.backends = std::stol(next());
        else if (a == "--metrics")
            o.metrics = std::stol(next());
        else if (a == "--seq")
            o.seq = std::stoull(next());
        else if (a == "--dropped")
            o.dropped = std::stoull(next());
        else if (a == "--value")
            o.value = std::stod(next());
        else if (a == "--period")
            o.period_s = std::stod(next());
        else if (a == "--time-offset")
            o.time_offset_s = std::stod(next());
        else if (a == "--raw-bytes")
            o.raw_bytes = std::stol(next());
        else if (a == "--idle-connections")
            o.idle_connections = std::stol(next());
        else if (a == "--hold")
            o.hold_s = std::stod(next());
        else if (a == "--idle-zmq")
            o.idle_zmq = std::stol(next());
        else if (a == "--idle-sub")
            o.idle_sub = std::stol(next());
        else if (a == "--linger")
            o.linger_ms = std::stoi(next());
        else if (a == "--meta") {
            auto kv = next();
            auto eq = kv.find('=');
            if (eq == std::string::npos)
                usage("--meta takes KEY=VALUE");
            o.meta.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else
            usage(("unknown option " + a).c_str());
    }
    if (o.uri.empty())
        usage("--uri is required");
    return o;
}

// Open n TCP connections to a tcp://HOST:PORT and hold them, sending nothing.
int hold_idle(const Options &o)
{
    auto rest = o.uri.substr(6);
    auto colon = rest.rfind(':');
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(rest.substr(colon + 1))));
    inet_pton(AF_INET, rest.substr(0, colon).c_str(), &addr.sin_addr);
    std::vector<int> fds;
    for (long i = 0; i < o.idle_connections; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            break;
        if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
            ::close(fd);
            continue;
        }
        fds.push_back(fd);
    }
    std::printf("holding %zu idle connections\n", fds.size());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.hold_s));
    for (int fd : fds)
        ::close(fd);
    return 0;
}

wire::Message make_message(const Options &o)
{
    wire::Message m;
    m.kind = o.kind == "job_start" ? wire::MessageKind::job_start
             : o.kind == "job_end" ? wire::MessageKind::job_end
                                   : wire::MessageKind::sample;
    m.host = o.host;
    m.job_id = o.job;
    m.sender = o.sender.empty() ? o.host + "/forge/" + std::to_string(::getpid()) : o.sender;
    m.dropped = o.dropped;
    m.period_s = o.period_s;
    m.meta = o.meta;
    for (long b = 0; b < o.backends; ++b) {
        wire::BackendBlock blk;
        blk.name = b == 0 ? "cgroup_cpu" : "forged_" + std::to_string(b);
        for (long i = 0; i < o.metrics; ++i) {
            blk.metrics.push_back({"metric_" + std::to_string(i), "1", wire::MetricKind::counter});
            blk.values.push_back(o.value + static_cast<double>(i));
        }
        m.backends.push_back(std::move(blk));
    }
    return m;
}

}  // namespace

static int run(int argc, char **argv)
{
    Options o = parse(argc, argv);
    if (o.idle_connections > 0)
        return hold_idle(o);

    zmq::context_t ctx(1);
    if (o.idle_zmq > 0 || o.idle_sub > 0) {
        // PUSH connections that never send, or SUB connections (to every
        // acknowledgement) that only listen.
        const long n = o.idle_zmq > 0 ? o.idle_zmq : o.idle_sub;
        ctx.set(zmq::ctxopt::max_sockets, static_cast<int>(n) + 16);
        std::vector<zmq::socket_t> sockets;
        for (long i = 0; i < n; ++i) {
            sockets.emplace_back(ctx, o.idle_zmq > 0 ? zmq::socket_type::push : zmq::socket_type::sub);
            sockets.back().set(zmq::sockopt::linger, 0);
            if (o.idle_sub > 0)
                sockets.back().set(zmq::sockopt::subscribe, "");
            sockets.back().connect(o.uri);
        }
        std::printf("holding %ld ZeroMQ connections\n", n);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::duration<double>(o.hold_s));
        return 0;
    }
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::sndhwm, 1000000);
    push.set(zmq::sockopt::linger, o.linger_ms);
    if (!o.secret_key.empty()) {
        auto mine = auth::read_key_pair_file(o.secret_key);
        auto server = auth::read_server_key_file(o.server_key);
        if (!mine || !server) {
            std::fprintf(stderr, "colmet-forge: %s\n", (!mine ? mine.error() : server.error()).message().c_str());
            return 66;
        }
        push.set(zmq::sockopt::curve_serverkey, *server);
        push.set(zmq::sockopt::curve_publickey, mine->public_key);
        push.set(zmq::sockopt::curve_secretkey, mine->secret_key);
    }
    push.connect(o.uri);

    const auto start = std::chrono::steady_clock::now();
    long sent = 0;
    if (o.raw_bytes >= 0) {
        std::string frame(static_cast<size_t>(o.raw_bytes), 'x');
        for (long i = 0; i < o.count; ++i)
            sent += push.send(zmq::buffer(frame), zmq::send_flags::none).has_value();
    } else {
        wire::Message m = make_message(o);
        std::string bytes;
        const long jobs = o.jobs > 0 ? o.jobs : 1;
        for (long j = 0; j < jobs; ++j) {
            if (o.jobs > 0) {
                m.job_id = o.job + "-" + std::to_string(j);
                m.sender = m.host + "/forge/" + std::to_string(::getpid()) + "/" + std::to_string(j);
            }
            for (long i = 0; i < o.count; ++i) {
                m.seq = o.seq + static_cast<unsigned long long>(i);
                m.time_ns = realtime_ns() + static_cast<int64_t>(o.time_offset_s * 1e9);
                if (auto r = wire::encode(m, bytes); !r) {
                    std::fprintf(stderr, "colmet-forge: %s\n", r.error().message().c_str());
                    return 65;
                }
                sent += push.send(zmq::buffer(bytes), zmq::send_flags::none).has_value();
            }
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("sent %ld messages in %.3f s at %lld\n", sent, seconds, static_cast<long long>(realtime_ns()));
    return 0;
}

int main(int argc, char **argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {  // a ZeroMQ error, a bad number
        std::fprintf(stderr, "colmet-forge: %s\n", e.what());
        return 1;
    }
}
