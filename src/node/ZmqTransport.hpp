// The sampler's transport to its collector: a ZeroMQ PUSH socket, with
// CURVE and acknowledgements when configured.
#pragma once

#include "common/result.hpp"
#include "node/Transport.hpp"

#include <memory>
#include <string>

namespace colmet::node {

struct ZmqOptions {
    std::string uri = "tcp://127.0.0.1:5556";
    int hwm = 1000;       // messages queued at most while the collector is slow or away
    int linger_ms = 500;  // how long close() may wait to deliver what is queued
    // The collector's ack endpoint (ZeroMQ SUB connects here); empty: no
    // acknowledgements (protocol version 1 messages).
    std::string ack_uri;
    // CURVE (both or neither): the collector's public-key file and this
    // node's key-pair file, made by colmet-keygen.
    std::string curve_server_key;
    std::string curve_secret_key;
};

// A ZeroMQ PUSH socket connected to the collector (a CURVE client when the
// keys are given; a key that cannot be read is an error here).
Result<std::unique_ptr<Transport>> make_zmq_transport(const ZmqOptions &options);

}  // namespace colmet::node
