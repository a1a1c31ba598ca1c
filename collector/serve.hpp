// The collector's socket loop: one thread, a ZeroMQ PULL socket (CURVE
// server when keys are configured), its ZAP handler and monitor, and a
// signalfd.
#pragma once

#include "collector/Collector.hpp"
#include "collector/security/ConnectionGuard.hpp"

#include <functional>
#include <string>

namespace colmet::collector {

struct ListenOptions {
    std::string bind_uri;  // resolved by the caller (see BindPolicy.hpp)
    // Where acknowledgements are published (ZeroMQ PUB binds here, with the
    // same CURVE keys); empty: none (protocol version 1 only).
    std::string ack_bind_uri;
    // Messages queued at most per connection: with frames of 1 MiB at most,
    // what one connection can make the collector hold (100 MiB). A sampler
    // keeps the rest in its own queue while the collector is behind.
    int hwm = 100;
    ConnectionLimits connections;
    std::string curve_secret_key;  // the collector's key-pair file; empty: no CURVE
    std::string nodes_dir;         // the node keys (read at start and on SIGHUP)
    // On SIGHUP, after everything buffered was written: re-open the log file
    // (log rotation). May be empty.
    std::function<void()> reopen_log;
};

// Listen and run the collector until SIGTERM or SIGINT (which, with SIGHUP,
// the caller has blocked). SIGHUP writes everything buffered, keeps the
// files open, re-opens the log file and reloads the node keys. Returns 0;
// 69 when the socket cannot be bound; 78 when the keys cannot be read.
int serve(Collector &collector, const ListenOptions &options);

}  // namespace colmet::collector
