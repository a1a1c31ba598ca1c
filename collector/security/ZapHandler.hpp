// The collector's ZeroMQ authentication handler (ZAP, ZeroMQ RFC 27): it
// answers the handshake of every CURVE connection, letting in only the
// public keys of the nodes directory. The key of an accepted connection
// becomes its ZeroMQ "User-Id", which the collector reads from every message
// to check the message's host against the key's (NodeKeys::allows).
//
// answer() is pure (request frames in, reply frames out); serve.cpp owns the
// REP socket at inproc://zeromq.zap.01.
#pragma once

#include "auth/NodeKeys.hpp"
#include "common/log.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace colmet::collector {

inline constexpr const char *k_zap_endpoint = "inproc://zeromq.zap.01";

struct ZapStats {
    uint64_t accepted = 0;  // handshakes of known keys
    uint64_t refused = 0;   // unknown keys, other mechanisms, malformed requests
};

class ZapHandler {
public:
    explicit ZapHandler(std::shared_ptr<const auth::NodeKeys> keys) : m_keys(std::move(keys)) {}

    // The reply to one ZAP request (its frames, in order). Refusals are
    // logged at a bounded rate with the peer's address.
    std::vector<std::string> answer(const std::vector<std::string> &request);

    // The keys in force from now on (SIGHUP). Connections already made keep
    // going; their messages are checked against the new keys.
    void set_keys(std::shared_ptr<const auth::NodeKeys> keys) { m_keys = std::move(keys); }
    const std::shared_ptr<const auth::NodeKeys> &keys() const { return m_keys; }

    const ZapStats &stats() const { return m_stats; }

private:
    std::vector<std::string> refuse(const std::string &request_id, const std::string &code, const std::string &why,
                                    const std::string &address);

    std::shared_ptr<const auth::NodeKeys> m_keys;
    ZapStats m_stats;
    log::RateLimiter m_log{10, std::chrono::seconds(60)};
};

}  // namespace colmet::collector
