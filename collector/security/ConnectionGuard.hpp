// Keeps the collector's TCP connections within bounds, so that idle or
// excess connections cannot use up descriptors that real senders need.
// It follows the receive socket's monitor events (accepted, closed) and the
// descriptor each message came from (ZMQ_SRCFD), and says which connections
// to cut: those that carried no message for idle_timeout, and, when a new
// connection would exceed max_connections, the oldest connection that never
// carried a message (or the new one, when every connection has carried
// one). So connections that only hold a descriptor cannot keep a real
// sender out: its connection gets in, and its first message protects it. serve.cpp cuts them with shutdown(2) (ZeroMQ
// then closes them itself); a sampler's ZeroMQ socket reconnects on its own
// and resends what it had queued.
//
// Descriptor numbers are reused once closed; events arrive in order on one
// thread, so a closed-then-reused number is seen as closed, then accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace colmet::collector {

struct ConnectionLimits {
    size_t max_connections = 16384;
    int64_t idle_timeout_ns = 600'000'000'000;  // 10 minutes
};

struct ConnectionStats {
    uint64_t accepted = 0;
    uint64_t over_limit = 0;        // cut because max_connections were open (the new one, or one without a message)
    uint64_t idle = 0;              // cut: no message for idle_timeout
    uint64_t handshake_failed = 0;  // wrong mechanism (no key), unknown key, bad greeting
};

class ConnectionGuard {
public:
    explicit ConnectionGuard(ConnectionLimits limits) : m_limits(limits) {}

    // A connection was accepted on `fd`: the descriptor to cut now (`fd`
    // itself, or an older connection that never carried a message), or -1.
    int accepted(int fd, int64_t now_ns);
    void closed(int fd);
    void handshake_failed() { ++m_stats.handshake_failed; }
    void message_from(int fd, int64_t now_ns);
    // Connections idle for idle_timeout; they are forgotten here.
    std::vector<int> idle(int64_t now_ns);
    // Count the connections accepted before cutoff_ns as carrying messages
    // (the acknowledgement socket's subscribers, which never send one, once
    // they outlived the handshake time: their handshake succeeded).
    void protect_older_than(int64_t cutoff_ns);

    size_t open() const { return m_connections.size(); }
    const ConnectionStats &stats() const { return m_stats; }
    const ConnectionLimits &limits() const { return m_limits; }

private:
    ConnectionLimits m_limits;
    struct Connection {
        int64_t last_activity_ns;  // accepted, or its last message
        bool carried_message;
    };
    std::unordered_map<int, Connection> m_connections;
    ConnectionStats m_stats;
};

}  // namespace colmet::collector
