#include "node/ZmqTransport.hpp"

#include "auth/CurveKeys.hpp"
#include "wire/ack.hpp"

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include <cstring>

namespace colmet::node {
namespace {

constexpr const char *k_monitor_endpoint = "inproc://colmet.node.monitor";
constexpr int k_handshake_failures =
    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

class ZmqTransport : public Transport {
public:
    ZmqTransport()
        : m_ctx(1), m_socket(m_ctx, zmq::socket_type::push), m_monitor(m_ctx, zmq::socket_type::pair),
          m_acks(m_ctx, zmq::socket_type::sub)
    {
    }

    Result<void> connect(const ZmqOptions &o)
    {
        auth::KeyPair mine;
        std::string server;
        if (o.curve_server_key.empty() != o.curve_secret_key.empty())
            return Error::invalid("CURVE needs both curve-server-key (the collector's public key) and "
                                  "curve-secret-key (this node's key pair)");
        const bool curve = !o.curve_secret_key.empty();
        if (curve) {
            auto pair = auth::read_key_pair_file(o.curve_secret_key);
            if (!pair)
                return pair.error().with_context("node key");
            auto key = auth::read_server_key_file(o.curve_server_key);
            if (!key)
                return key.error().with_context("collector key");
            mine = std::move(*pair);
            server = std::move(*key);
        }
        try {
            if (curve) {
                m_socket.set(zmq::sockopt::curve_serverkey, server);
                m_socket.set(zmq::sockopt::curve_publickey, mine.public_key);
                m_socket.set(zmq::sockopt::curve_secretkey, mine.secret_key);
            }
            // Options first: the HWM applies to pipes created by connect().
            m_socket.set(zmq::sockopt::sndhwm, o.hwm);
            m_socket.set(zmq::sockopt::linger, o.linger_ms);
            m_acked = !o.ack_uri.empty();
            if (m_acked) {
                // Nothing waits inside ZeroMQ while the collector is away:
                // the sampler's outbox holds it, and resends it in order.
                m_socket.set(zmq::sockopt::immediate, true);
                if (curve) {
                    m_acks.set(zmq::sockopt::curve_serverkey, server);
                    m_acks.set(zmq::sockopt::curve_publickey, mine.public_key);
                    m_acks.set(zmq::sockopt::curve_secretkey, mine.secret_key);
                }
                m_acks.set(zmq::sockopt::linger, 0);
                m_acks.connect(o.ack_uri);
            }
            if (curve)
                mine.secret_key.assign(mine.secret_key.size(), '\0');
            // Handshake failures say why nothing arrives: the collector
            // refused the key, or the two sides disagree on CURVE. A
            // handshake that succeeds is a (re)connection.
            if (zmq_socket_monitor(m_socket.handle(), k_monitor_endpoint,
                                   k_handshake_failures | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                                       ZMQ_EVENT_CONNECT_RETRIED) == 0)
                m_monitor.connect(k_monitor_endpoint);
            m_curve = curve;
            m_uri = o.uri;
            m_socket.connect(o.uri);
        } catch (const zmq::error_t &e) {
            return Error(Errc::invalid, "ZeroMQ connect to '" + o.uri + "': " + e.what(), e.num());
        }
        return ok();
    }

    bool acknowledged() const noexcept override { return m_acked; }
    bool may_answer() const noexcept override { return m_connected || !m_refused; }

    void listen_for_acks(std::string_view sender) override
    {
        if (!m_acked)
            return;
        m_sender = sender;
        m_acks.set(zmq::sockopt::subscribe, wire::ack_topic(sender));
    }

    int event_fd() const noexcept override
    {
        if (!m_acked)
            return -1;
        try {
            return m_acks.get(zmq::sockopt::fd);
        } catch (const zmq::error_t &) {
            return -1;
        }
    }

    TransportEvents events() noexcept override
    {
        TransportEvents out;
        try {
            check_handshakes();
            out.reconnected = m_reconnected;
            m_reconnected = false;
            if (!m_acked)
                return out;
            zmq::message_t frame;
            while (m_acks.recv(frame, zmq::recv_flags::dontwait)) {
                auto seq =
                    wire::decode_ack(std::string_view(static_cast<const char *>(frame.data()), frame.size()), m_sender);
                if (seq && (!out.acked || *seq > *out.acked))
                    out.acked = seq;
            }
        } catch (const zmq::error_t &) {
        }
        return out;
    }

    bool send(std::string_view bytes) noexcept override
    {
        try {
            check_handshakes();
            auto sent = m_socket.send(zmq::const_buffer(bytes.data(), bytes.size()), zmq::send_flags::dontwait);
            return sent.has_value();
        } catch (const zmq::error_t &) {
            return false;
        }
    }

private:
    // Log the first failed handshake, and how many more at most once a minute.
    void check_handshakes()
    {
        zmq::message_t event, endpoint;
        while (m_monitor.recv(event, zmq::recv_flags::dontwait)) {
            if (event.more())
                (void)m_monitor.recv(endpoint, zmq::recv_flags::dontwait);
            uint16_t kind = 0;
            if (event.size() >= 2)
                std::memcpy(&kind, event.data(), 2);
            if (kind == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
                // The first connection loses nothing: until it was made,
                // ZMQ_IMMEDIATE refused every send.
                m_reconnected = m_reconnected || m_connections > 0;
                ++m_connections;
                m_connected = true;
                m_refused = false;
                continue;
            }
            if (kind == ZMQ_EVENT_DISCONNECTED) {
                m_connected = false;
                continue;
            }
            if (kind == ZMQ_EVENT_CONNECT_RETRIED) {  // refused or unreachable: ZeroMQ tries again later
                m_refused = true;
                continue;
            }
            if (m_failed_handshakes++ > 0)
                continue;
            if (kind == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
                spdlog::error("the collector at {} refused this node's key: is its public key (colmet-keygen "
                              "--public-of) in the collector's nodes directory?",
                              m_uri);
            else
                spdlog::error("handshake with the collector at {} failed: {}", m_uri,
                              m_curve ? "is the collector using CURVE, and is curve-server-key its public key?"
                                      : "the collector may require CURVE keys (curve-server-key, curve-secret-key)");
        }
    }

    zmq::context_t m_ctx;
    zmq::socket_t m_socket;
    zmq::socket_t m_monitor;
    zmq::socket_t m_acks;  // SUB to the collector's ack endpoint (acknowledged delivery only)
    std::string m_uri;
    std::string m_sender;
    bool m_curve = false;
    bool m_acked = false;
    bool m_reconnected = false;
    uint64_t m_connections = 0;  // handshakes that succeeded
    bool m_connected = false;
    bool m_refused = false;  // connecting failed since the last connection
    uint64_t m_failed_handshakes = 0;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_zmq_transport(const ZmqOptions &options)
{
    auto t = std::make_unique<ZmqTransport>();
    if (auto r = t->connect(options); !r)
        return r.error();
    return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace colmet::node
