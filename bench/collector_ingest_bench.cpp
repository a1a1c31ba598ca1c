// Collector ingest end to end: realistic 60-metric messages of 1,000
// concurrent jobs, sent over a real ZeroMQ socket by another thread, received,
// decoded, validated and stored into compressed HDF5 files by the collector's
// own code (Collector + Hdf5Sink) on one thread. The figure that matters is
// messages per CPU-second of the receiving thread (= one core); wall-clock
// rate is reported too. Job starts (file creation) and job ends (summary,
// close) are timed apart and reported per job: they happen once per job,
// samples every period.
#include "BenchMessages.hpp"
#include "collector/Collector.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "common/clock.hpp"
#include "wire/codec.hpp"

#include <benchmark/benchmark.h>
#include <zmq.hpp>

#include <filesystem>
#include <malloc.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace colmet;

namespace {

double thread_cpu_s()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void raise_fd_limit()
{
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

} // namespace

static void BM_collector_ingest(benchmark::State &state)
{
    const int jobs = static_cast<int>(state.range(0));
    const int samples_per_job = static_cast<int>(state.range(1));
    raise_fd_limit();
    mallopt(M_TRIM_THRESHOLD, 64 << 20);  // as colmet-collector does
    mallopt(M_MMAP_THRESHOLD, 4 << 20);

    // Pre-encode every message: job_start for each job, then samples
    // interleaved across jobs, then job_end for each job.
    std::vector<std::string> frames;
    frames.reserve(static_cast<size_t>(jobs) * static_cast<size_t>(samples_per_job + 2));
    auto add = [&](int job, uint64_t seq, wire::MessageKind kind) {
        auto m = bench::realistic_message("job-" + std::to_string(job), seq);
        m.sender = "bench/" + std::to_string(job);
        m.kind = kind;
        if (kind == wire::MessageKind::job_start)
            m.meta = {{"user", "bench"}, {"cpus", "4"}};
        std::string bytes;
        (void)wire::encode(m, bytes);
        frames.push_back(std::move(bytes));
    };
    for (int j = 0; j < jobs; ++j)
        add(j, 0, wire::MessageKind::job_start);
    for (int s = 1; s <= samples_per_job; ++s)
        for (int j = 0; j < jobs; ++j)
            add(j, static_cast<uint64_t>(s), wire::MessageKind::sample);
    for (int j = 0; j < jobs; ++j)
        add(j, static_cast<uint64_t>(samples_per_job + 1), wire::MessageKind::job_end);

    auto dir = std::filesystem::temp_directory_path() / ("colmet-bench-" + std::to_string(getpid()));
    double cpu_start = 0, wall_start = 0, cpu_steady = 0, wall_steady = 0, cpu_end = 0, wall_end = 0;
    uint64_t steady_messages = 0;
    for (auto _ : state) {
        std::filesystem::remove_all(dir);
        collector::Hdf5Options options;
        options.dir = dir;
        options.max_open_files = static_cast<size_t>(jobs) + 16;
        auto sink = collector::make_hdf5_sink(options);
        if (!sink) {
            state.SkipWithError(sink.error().message().c_str());
            return;
        }
        std::vector<std::unique_ptr<collector::Sink>> sinks;
        sinks.push_back(std::move(*sink));
        collector::Collector collector(std::move(sinks));

        zmq::context_t ctx(1);
        zmq::socket_t pull(ctx, zmq::socket_type::pull);
        pull.set(zmq::sockopt::rcvhwm, 100000);
        pull.bind("tcp://127.0.0.1:*");
        std::string endpoint = pull.get(zmq::sockopt::last_endpoint);
        std::thread sender([&] {
            zmq::socket_t push(ctx, zmq::socket_type::push);
            push.set(zmq::sockopt::sndhwm, 100000);
            push.set(zmq::sockopt::linger, -1);
            push.connect(endpoint);
            for (const auto &f : frames)
                push.send(zmq::buffer(f), zmq::send_flags::none);
        });

        // Three phases, timed apart: job starts (file creation), the steady
        // stream of samples (the ingest rate), job ends (summaries, closes).
        const size_t starts_end = static_cast<size_t>(jobs);
        const size_t samples_end = frames.size() - static_cast<size_t>(jobs);
        double cpu_mark = thread_cpu_s();
        int64_t wall_mark = monotonic_ns();
        int64_t last_tick = wall_mark;
        zmq::message_t frame;
        auto lap = [&](double &cpu_acc, double &wall_acc) {
            double c = thread_cpu_s();
            int64_t w = monotonic_ns();
            cpu_acc += c - cpu_mark;
            wall_acc += static_cast<double>(w - wall_mark) / 1e9;
            cpu_mark = c;
            wall_mark = w;
        };
        for (size_t received = 0; received < frames.size(); ++received) {
            if (received == starts_end)
                lap(cpu_start, wall_start);
            if (received == samples_end)
                lap(cpu_steady, wall_steady);
            (void)pull.recv(frame, zmq::recv_flags::none);
            int64_t now = monotonic_ns();
            collector.handle_frame(static_cast<const char *>(frame.data()), frame.size(), frame.more(), now);
            if (now - last_tick >= 200'000'000) {
                collector.tick(now);
                last_tick = now;
            }
        }
        collector.close_all();
        lap(cpu_end, wall_end);
        steady_messages += samples_end - starts_end;
        sender.join();
        if (collector.stats().accepted != frames.size())
            state.SkipWithError("not every message was accepted");
    }
    std::filesystem::remove_all(dir);
    auto iterations = static_cast<double>(state.iterations());
    state.counters["msgs_per_cpu_s"] = static_cast<double>(steady_messages) / cpu_steady;
    state.counters["msgs_per_wall_s"] = static_cast<double>(steady_messages) / wall_steady;
    state.counters["values_per_cpu_s"] = static_cast<double>(steady_messages) * 60 / cpu_steady;
    state.counters["job_start_ms_cpu"] = cpu_start * 1000 / (jobs * iterations);
    state.counters["job_end_ms_cpu"] = cpu_end * 1000 / (jobs * iterations);
    state.counters["frame_bytes"] = static_cast<double>(frames[frames.size() / 2].size());
}
BENCHMARK(BM_collector_ingest)->Args({1000, 100})->Args({100, 50})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
