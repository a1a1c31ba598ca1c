// The compression floor of the collector's ingest: what shuffling and
// deflating one message's rows costs, with nothing else (no HDF5, no
// decoding, no bookkeeping). Rows come from the same realistic messages as
// collector_ingest_bench (60 metrics in 4 backends); each backend's rows are
// encoded in chunks of the size the sink uses (8 KiB of values: 68 rows of
// 15 metrics), and its time column in chunks of 1,024 rows, each chunk
// exactly once. The sink does at least this much per message (it also
// re-encodes a flush's last, partial chunk), so 1 / us_per_message bounds
// the ingest rate of one core whatever the rest costs (items_per_second).
#include "BenchMessages.hpp"
#include "collector/sinks/hdf5/ChunkCodec.hpp"

#include <benchmark/benchmark.h>

#include <cstring>

using namespace colmet;
using collector::hdf5::ChunkCodec;

namespace {

constexpr size_t k_backends = 4;
constexpr size_t k_metrics = 15;
constexpr size_t k_value_rows = size_t{8} * 1024 / (sizeof(double) * k_metrics);  // as the sink sizes them: 68
constexpr size_t k_time_rows = 1024;
constexpr size_t k_messages = k_value_rows * k_time_rows;  // whole chunks of both kinds

}  // namespace

static void BM_deflate_rows_of_one_message(benchmark::State &state)
{
    const int level = static_cast<int>(state.range(0));
    // Values [backend][message][metric] and times [message], as the sink buffers them.
    std::vector<std::vector<double>> values(k_backends, std::vector<double>(k_messages * k_metrics));
    std::vector<int64_t> times(k_messages);
    auto msg = bench::realistic_message("4242", 0);
    for (size_t m = 0; m < k_messages; ++m) {
        bench::set_sample(msg, m);
        times[m] = msg.time_ns;
        for (size_t b = 0; b < k_backends; ++b)
            std::memcpy(&values[b][m * k_metrics], msg.backends[b].values.data(), k_metrics * sizeof(double));
    }
    ChunkCodec codec(level);
    size_t in_bytes = 0, out_bytes = 0;
    for (auto _ : state) {
        in_bytes = out_bytes = 0;
        for (size_t b = 0; b < k_backends; ++b) {
            for (size_t first = 0; first < k_messages; first += k_value_rows) {
                auto out = codec.encode(&values[b][first * k_metrics], k_value_rows * k_metrics * sizeof(double),
                                        sizeof(double));
                in_bytes += k_value_rows * k_metrics * sizeof(double);
                out_bytes += out.size();
                benchmark::DoNotOptimize(out.data());
            }
            // Each backend's segment has its own time column.
            for (size_t first = 0; first < k_messages; first += k_time_rows) {
                auto out = codec.encode(&times[first], k_time_rows * sizeof(int64_t), sizeof(int64_t));
                in_bytes += k_time_rows * sizeof(int64_t);
                out_bytes += out.size();
                benchmark::DoNotOptimize(out.data());
            }
        }
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * k_messages));
    // Seconds of CPU per message, printed with an SI prefix ("2.1u" = 2.1 µs).
    state.counters["cpu_s_per_message"] = benchmark::Counter(static_cast<double>(state.iterations() * k_messages),
                                                             benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["ratio"] = static_cast<double>(in_bytes) / static_cast<double>(out_bytes);
}
BENCHMARK(BM_deflate_rows_of_one_message)->Arg(1)->Arg(6)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
