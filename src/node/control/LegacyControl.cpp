#include "node/control/LegacyControl.hpp"

#include "common/log.hpp"

namespace colmet::node::control {
namespace {

constexpr int k_messages_per_call = 16;
constexpr int64_t k_max_message_bytes = int64_t{64} * 1024;

std::string describe(const ControlRequest &r)
{
    std::string s;
    if (r.period_s)
        s += "sample_period=" + std::to_string(*r.period_s);
    if (r.perfhw_events) {
        s += s.empty() ? "" : " ";
        s += "perfhw_metrics=";
        for (size_t i = 0; i < r.perfhw_events->size(); ++i)
            s += (i ? "," : "") + (*r.perfhw_events)[i];
    }
    return s;
}

}  // namespace

Result<std::unique_ptr<LegacyControl>> LegacyControl::bind(const std::string &uri)
{
    if (uri.rfind("tcp://", 0) != 0)
        return Error::invalid("--legacy-control-uri '" + uri + "': only tcp:// endpoints are accepted");
    std::unique_ptr<LegacyControl> c(new LegacyControl());
    try {
        c->m_socket.set(zmq::sockopt::maxmsgsize, k_max_message_bytes);
        c->m_socket.set(zmq::sockopt::rcvhwm, 16);
        c->m_socket.set(zmq::sockopt::linger, 0);
        c->m_socket.bind(uri);
    } catch (const zmq::error_t &e) {
        return Error(Errc::invalid, "--legacy-control-uri: bind '" + uri + "': " + e.what(), e.num());
    }
    c->m_uri = uri;
    return c;
}

int LegacyControl::fd() const
{
    try {
        return static_cast<int>(m_socket.get(zmq::sockopt::fd));
    } catch (const zmq::error_t &) {
        return -1;
    }
}

bool LegacyControl::handle(const Handler &handler)
{
    for (int i = 0; i < k_messages_per_call; ++i) {
        zmq::message_t msg;
        zmq::recv_result_t got;
        try {
            got = m_socket.recv(msg, zmq::recv_flags::dontwait);
        } catch (const zmq::error_t &) {
            return false;
        }
        if (!got)
            return false;
        if (msg.more()) {
            // Multi-part messages are not the original's: drop every part.
            ++m_rejected;
            if (uint64_t skipped = 0; m_log_limit.allow(&skipped))
                spdlog::warn("legacy control: multi-part message ignored ({} more not logged)", skipped);
            while (msg.more()) {
                try {
                    if (!m_socket.recv(msg, zmq::recv_flags::dontwait))
                        break;
                } catch (const zmq::error_t &) {
                    break;
                }
            }
            continue;
        }
        auto request = decode_legacy_configure(std::string_view(static_cast<const char *>(msg.data()), msg.size()));
        if (!request) {
            ++m_rejected;
            if (uint64_t skipped = 0; m_log_limit.allow(&skipped))
                spdlog::warn("legacy control: configure message rejected: {} ({} more not logged)",
                             request.error().message(), skipped);
            continue;
        }
        ControlAnswer a = handler(*request);
        if (a.accepted)
            spdlog::info("legacy control: applied {}", describe(*request));
        else {
            ++m_rejected;
            if (uint64_t skipped = 0; m_log_limit.allow(&skipped))
                spdlog::warn("legacy control: {} rejected: {} ({} more not logged)", describe(*request), a.reason,
                             skipped);
        }
    }
    return true;
}

}  // namespace colmet::node::control
