// The sampling loop of colmet-node: read every backend once per period,
// encode one message, hand it to the transport. Single-threaded; SIGTERM and
// SIGINT arrive through a signalfd so the loop wakes at once.
#pragma once

#include "node/MetricBackend.hpp"
#include "node/Transport.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace colmet::node {

struct SamplerConfig {
    std::string job_id;
    std::string host;
    double period_s = 5;
    std::vector<std::pair<std::string, std::string>> meta;  // sent in job_start
    // The job's primary cgroup directory: when it disappears the job is over.
    std::string cgroup_dir;
};

struct SamplerStats {
    uint64_t samples = 0;   // messages queued
    uint64_t dropped = 0;   // messages refused by the full queue
    uint64_t encode_errors = 0;
};

class Sampler {
public:
    Sampler(SamplerConfig config, std::vector<std::unique_ptr<MetricBackend>> backends,
            std::unique_ptr<Transport> transport);

    // Run until SIGTERM/SIGINT (which must be blocked in the calling thread;
    // the loop reads them from a signalfd) or until the job's cgroup
    // disappears. Sends job_start first and job_end with a final sample last.
    // Returns the signal number that ended the loop (0 when the cgroup went away).
    int run();

    // One sample of every backend into the message (for tests and benchmarks).
    void sample_once(wire::MessageKind kind);
    const wire::Message &message() const { return m_msg; }
    const SamplerStats &stats() const { return m_stats; }

private:
    void send_current();
    void log_end() const;

    SamplerConfig m_config;
    std::vector<std::unique_ptr<MetricBackend>> m_backends;
    std::unique_ptr<Transport> m_transport;
    wire::Message m_msg;
    std::string m_buffer;
    SamplerStats m_stats;
    uint64_t m_unreported_drops = 0;
};

} // namespace colmet::node
