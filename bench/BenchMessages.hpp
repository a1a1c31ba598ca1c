// Realistic messages for the benchmarks: 60 metrics in 4 backends, like a
// sample with the cgroup backends plus a handful of perf counters.
#pragma once

#include "wire/message.hpp"

#include <string>

namespace colmet::bench {

// Set the sequence number, time and values of a realistic message for seq.
inline void set_sample(wire::Message &m, uint64_t seq)
{
    m.seq = seq;
    m.time_ns = 1'764'670'000'000'000'000 + static_cast<int64_t>(seq) * 1'000'000'000;
    for (auto &blk : m.backends)
        for (size_t i = 0; i < blk.values.size(); ++i)
            blk.values[i] = i % 4 == 0 ? 0.5 * static_cast<double>(seq + 1)
                                       : static_cast<double>((seq + 1) * 1000003ULL * static_cast<uint64_t>(i + 1));
}

inline wire::Message realistic_message(const std::string &job_id, uint64_t seq)
{
    wire::Message m;
    m.kind = wire::MessageKind::sample;
    m.host = "node-0421.cluster.example.org";
    m.job_id = job_id;
    m.sender = m.host + "/31337/1764670000000000000";
    m.period_s = 1;
    const char *backends[] = {"cgroup_cpu", "cgroup_memory", "cgroup_io", "perfhw"};
    for (int b = 0; b < 4; ++b) {
        wire::BackendBlock blk;
        blk.name = backends[b];
        for (int i = 0; i < 15; ++i) {
            blk.metrics.push_back({"metric_" + std::to_string(b) + "_" + std::to_string(i), b == 1 ? "B" : "1",
                                   i % 3 ? wire::MetricKind::counter : wire::MetricKind::gauge});
            blk.values.push_back(0);
        }
        m.backends.push_back(std::move(blk));
    }
    set_sample(m, seq);
    return m;
}

}  // namespace colmet::bench
