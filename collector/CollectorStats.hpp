// Counters the collector keeps about what it received.
#pragma once

#include <cstdint>
#include <string>

namespace colmet::collector {

struct CollectorStats {
    uint64_t received = 0;     // frames read from the socket
    uint64_t accepted = 0;     // valid messages handed to the sinks
    uint64_t rejected = 0;     // frames dropped, all reasons
    uint64_t oversized = 0;    // of which larger than the protocol limit
    uint64_t multipart = 0;    // of which multi-frame messages
    uint64_t invalid = 0;      // of which failed decoding or validation
    uint64_t lost = 0;         // messages senders sent (or dropped) that never arrived

    std::string to_string() const;
};

} // namespace colmet::collector
