#include "collector/security/ZapHandler.hpp"

#include <spdlog/spdlog.h>

namespace colmet::collector {
namespace {

// Frames of a ZAP request (RFC 27).
enum Frame { version, request_id, domain, address, identity, mechanism, credentials, k_frames };

}  // namespace

std::vector<std::string> ZapHandler::refuse(const std::string &id, const std::string &code, const std::string &why,
                                            const std::string &address)
{
    ++m_stats.refused;
    uint64_t suppressed = 0;
    if (m_log.allow(&suppressed))
        spdlog::warn("refused a connection from {}: {}{}", address.empty() ? "?" : address, why,
                     suppressed ? " (" + std::to_string(suppressed) + " more refusals not logged)" : "");
    return {"1.0", id, code, why, "", ""};
}

std::vector<std::string> ZapHandler::answer(const std::vector<std::string> &request)
{
    if (request.size() < credentials || request[version] != "1.0")
        return refuse(request.size() > request_id ? request[request_id] : "", "500", "malformed ZAP request", "");
    const std::string &id = request[request_id];
    const std::string &peer = request[address];
    if (request[mechanism] != "CURVE")
        return refuse(id, "400", "mechanism " + request[mechanism] + " is not allowed (CURVE only)", peer);
    if (request.size() != k_frames)
        return refuse(id, "500", "malformed ZAP request", peer);
    std::string key = auth::z85_of(request[credentials]);
    if (key.empty())
        return refuse(id, "500", "malformed CURVE credentials", peer);
    if (!m_keys || !m_keys->knows(key))
        return refuse(id, "400", "unknown node key " + key + " (not in the nodes directory)", peer);
    ++m_stats.accepted;
    spdlog::debug("accepted a connection from {} with key {}", peer, key);
    return {"1.0", id, "200", "OK", key, ""};
}

}  // namespace colmet::collector
