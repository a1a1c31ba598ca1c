// Counters the collector keeps about what it received.
#pragma once

#include <cstdint>
#include <string>

namespace colmet::collector {

struct CollectorStats {
    uint64_t received = 0;      // frames read from the socket
    uint64_t accepted = 0;      // valid messages handed to the sinks
    uint64_t rejected = 0;      // frames dropped, all reasons
    uint64_t oversized = 0;     // of which larger than the protocol limit
    uint64_t multipart = 0;     // of which multi-frame messages
    uint64_t invalid = 0;       // of which failed decoding or validation
    uint64_t unauthorized = 0;  // of which sent for a host under a key not registered for it
    // Of which refused by the admission checks (collector/Admission.hpp):
    uint64_t refused_clock = 0;          // time too far from the collector's clock
    uint64_t refused_sequence = 0;       // seq or dropped beyond what the sender's period allows
    uint64_t refused_job_restart = 0;    // job_start from a sender already running
    uint64_t refused_hosts_per_job = 0;  // beyond --max-hosts-per-job
    uint64_t refused_jobs_per_host = 0;  // beyond --max-jobs-per-host
    uint64_t refused_new_jobs = 0;       // beyond --max-new-jobs-per-minute
    uint64_t lost = 0;                   // messages senders sent (or dropped) that never arrived

    std::string to_string() const;
};

}  // namespace colmet::collector
