// How the sampler hands encoded messages to the network. send() never
// blocks: when the queue towards the collector is full the message is
// refused and the sampler counts it as dropped.
#pragma once

#include "common/result.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace colmet::node {

class Transport {
public:
    virtual ~Transport() = default;
    // true when queued; false when the bounded queue is full (dropped).
    virtual bool send(std::string_view bytes) noexcept = 0;
};

struct ZmqOptions {
    std::string uri = "tcp://127.0.0.1:5556";
    int hwm = 1000;       // messages queued at most while the collector is slow or away
    int linger_ms = 500;  // how long close() may wait to deliver what is queued
    // CURVE (both or neither): the collector's public-key file and this
    // node's key-pair file, made by colmet-keygen.
    std::string curve_server_key;
    std::string curve_secret_key;
};

// A ZeroMQ PUSH socket connected to the collector (a CURVE client when the
// keys are given; a key that cannot be read is an error here).
Result<std::unique_ptr<Transport>> make_zmq_transport(const ZmqOptions &options);

// The options for one job when `uri` lists several collectors: `uri` becomes
// the job's collector (common/collectors.hpp), and `curve_server_key` its
// key file when that lists one file per collector, comma-separated in the
// same order (a single file serves every collector). An error when either
// list is malformed or the counts differ.
Result<ZmqOptions> choose_collector(const ZmqOptions &options, std::string_view job_id);

}  // namespace colmet::node
