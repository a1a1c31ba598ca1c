// The original colmet-rust configure channel, off unless
// --legacy-control-uri is given: a ZeroMQ PULL socket bound on a tcp://
// endpoint that accepts its configure message (decode_legacy_configure).
// UNAUTHENTICATED: anyone who can reach the endpoint can reconfigure the job;
// bind it to 127.0.0.1 or a trusted network only. There is no reply (the
// original sent none); outcomes are logged.
//
// Polled by the sampler through fd() (ZMQ_FD, edge-triggered): handle() must
// run after every wake-up; it drains what is queued, a bounded number of
// messages per call, and says when more remain.
#pragma once

#include "common/log.hpp"
#include "common/result.hpp"
#include "node/control/ControlProtocol.hpp"

#include <zmq.hpp>

#include <functional>
#include <memory>
#include <string>

namespace colmet::node::control {

class LegacyControl {
public:
    using Handler = std::function<ControlAnswer(const ControlRequest &)>;

    // Bind a PULL socket on `uri` (tcp:// only). Messages over 64 KiB make
    // ZeroMQ drop the sender's connection.
    static Result<std::unique_ptr<LegacyControl>> bind(const std::string &uri);

    int fd() const;
    // Apply queued configure messages (at most 16); returns true when more
    // may be waiting (call again without sleeping).
    bool handle(const Handler &handler);
    uint64_t rejected() const { return m_rejected; }

private:
    LegacyControl() : m_ctx(1), m_socket(m_ctx, zmq::socket_type::pull) {}

    zmq::context_t m_ctx;
    zmq::socket_t m_socket;
    std::string m_uri;
    uint64_t m_rejected = 0;
    log::RateLimiter m_log_limit{5, std::chrono::seconds(60)};  // rejections logged
};

}  // namespace colmet::node::control
