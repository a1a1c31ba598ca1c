#include "node/Transport.hpp"

#include <zmq.hpp>

namespace colmet::node {
namespace {

class ZmqTransport : public Transport {
public:
    ZmqTransport() : m_ctx(1), m_socket(m_ctx, zmq::socket_type::push) {}

    Result<void> connect(const ZmqOptions &o)
    {
        try {
            // Options first: the HWM applies to pipes created by connect().
            m_socket.set(zmq::sockopt::sndhwm, o.hwm);
            m_socket.set(zmq::sockopt::linger, o.linger_ms);
            m_socket.connect(o.uri);
        } catch (const zmq::error_t &e) {
            return Error(Errc::invalid, "ZeroMQ connect to '" + o.uri + "': " + e.what(), e.num());
        }
        return ok();
    }

    bool send(std::string_view bytes) noexcept override
    {
        try {
            auto sent = m_socket.send(zmq::const_buffer(bytes.data(), bytes.size()), zmq::send_flags::dontwait);
            return sent.has_value();
        } catch (const zmq::error_t &) {
            return false;
        }
    }

private:
    zmq::context_t m_ctx;
    zmq::socket_t m_socket;
};

} // namespace

Result<std::unique_ptr<Transport>> make_zmq_transport(const ZmqOptions &options)
{
    auto t = std::make_unique<ZmqTransport>();
    if (auto r = t->connect(options); !r)
        return r.error();
    return std::unique_ptr<Transport>(std::move(t));
}

} // namespace colmet::node
