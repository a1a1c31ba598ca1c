// Encode and decode time of one realistic 60-metric sample message.
#include "BenchMessages.hpp"
#include "wire/codec.hpp"

#include <benchmark/benchmark.h>

using namespace colmet;

static void BM_encode_60_metrics(benchmark::State &state)
{
    auto msg = bench::realistic_message("4242", 1);
    std::string out;
    for (auto _ : state) {
        auto r = wire::encode(msg, out);
        benchmark::DoNotOptimize(r);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["bytes"] = static_cast<double>(out.size());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_encode_60_metrics);

static void BM_decode_60_metrics(benchmark::State &state)
{
    std::string bytes;
    (void)wire::encode(bench::realistic_message("4242", 1), bytes);
    wire::Message out;
    for (auto _ : state) {
        auto r = wire::decode(bytes.data(), bytes.size(), out);
        benchmark::DoNotOptimize(r);
    }
    state.counters["bytes"] = static_cast<double>(bytes.size());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_decode_60_metrics);

BENCHMARK_MAIN();
