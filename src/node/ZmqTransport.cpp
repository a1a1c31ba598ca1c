#include "node/Transport.hpp"

#include "auth/CurveKeys.hpp"

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
    ZmqTransport() : m_ctx(1), m_socket(m_ctx, zmq::socket_type::push), m_monitor(m_ctx, zmq::socket_type::pair) {}

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
                mine.secret_key.assign(mine.secret_key.size(), '\0');
            }
            // Options first: the HWM applies to pipes created by connect().
            m_socket.set(zmq::sockopt::sndhwm, o.hwm);
            m_socket.set(zmq::sockopt::linger, o.linger_ms);
            // Handshake failures say why nothing arrives: the collector
            // refused the key, or the two sides disagree on CURVE.
            if (zmq_socket_monitor(m_socket.handle(), k_monitor_endpoint, k_handshake_failures) == 0)
                m_monitor.connect(k_monitor_endpoint);
            m_curve = curve;
            m_uri = o.uri;
            m_socket.connect(o.uri);
        } catch (const zmq::error_t &e) {
            return Error(Errc::invalid, "ZeroMQ connect to '" + o.uri + "': " + e.what(), e.num());
        }
        return ok();
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
    std::string m_uri;
    bool m_curve = false;
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
