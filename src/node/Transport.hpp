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
};

// A ZeroMQ PUSH socket connected to the collector.
Result<std::unique_ptr<Transport>> make_zmq_transport(const ZmqOptions &options);

} // namespace colmet::node
