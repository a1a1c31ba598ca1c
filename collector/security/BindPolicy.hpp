// Where an unauthenticated collector may listen. Without CURVE keys any
// process that reaches the port can write into any job's file, so the
// collector listens on the loopback only, unless the site says
// allow-unauthenticated = yes (then it warns at every start).
#pragma once

#include "common/result.hpp"

#include <string>

namespace colmet::collector {

inline constexpr const char *k_default_bind_secure = "tcp://0.0.0.0:5556";
inline constexpr const char *k_default_bind_loopback = "tcp://127.0.0.1:5556";

// tcp:// on 127.0.0.0/8, ::1, localhost or the "lo" interface; ipc:// and
// inproc:// (local by nature).
bool is_loopback_endpoint(const std::string &uri);

// Ok, or the reason the collector must not listen there.
Result<void> check_bind(const std::string &uri, bool authenticated, bool allow_unauthenticated);

// What to warn about an ipc:// address under /tmp (or /var/tmp) when the
// collector runs as a systemd service (invocation_id: $INVOCATION_ID, which
// systemd sets): its unit gives it a /tmp of its own (PrivateTmp), out of
// the nodes' reach. Empty when there is nothing to say.
std::string private_tmp_warning(const std::string &uri, const char *invocation_id);

}  // namespace colmet::collector
