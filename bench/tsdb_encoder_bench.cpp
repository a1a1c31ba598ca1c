// The time-series sink's encoders alone: points per second into a request
// body, in both protocols, the take() (serialise, snappy for remote write)
// included. Each point is one value of the realistic 60-metric message, with
// job_id, user, host and cluster labels, as TsdbSink makes them.
#include "BenchMessages.hpp"
#include "collector/sinks/tsdb/Encoder.hpp"

#include <benchmark/benchmark.h>
#include <malloc.h>

using namespace colmet;
using namespace colmet::collector::tsdb;

static void BM_encode(benchmark::State &state)
{
    mallopt(M_TRIM_THRESHOLD, 64 << 20);  // as colmet-collector does
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    const auto protocol = static_cast<Protocol>(state.range(0));
    const size_t batch = static_cast<size_t>(state.range(1));
    auto m = bench::realistic_message("4242", 1);
    m.host = "node-17.cluster.example.org";
    auto encoder = make_encoder(protocol);
    std::vector<std::pair<PreparedSeries, double>> points;  // prepared once, as TsdbSink does
    for (const auto &b : m.backends)
        for (size_t i = 0; i < b.metrics.size(); ++i)
            points.emplace_back(encoder->prepare(series_name(b.name, b.metrics[i])), b.values[i]);
    const Labels labels{"cluster1", m.host, m.job_id, "alice"};
    size_t bytes = 0, total = 0;
    int64_t t = m.time_ns;
    for (auto _ : state) {
        for (size_t n = 0; n < batch;) {
            encoder->labels(labels);  // as TsdbSink: once per message
            for (auto &[name, value] : points) {
                encoder->add(name, value, t);
                ++n;
            }
            t += 5'000'000'000;
        }
        total += encoder->points();
        bytes += encoder->take().size();
    }
    state.SetItemsProcessed(static_cast<int64_t>(total));
    state.counters["body_bytes_per_point"] = static_cast<double>(bytes) / static_cast<double>(total);
}

// {protocol (0 remote write, 1 influx), points per batch}
BENCHMARK(BM_encode)->Args({0, 10000})->Args({1, 10000})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
