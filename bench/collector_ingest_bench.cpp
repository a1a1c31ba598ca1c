// Collector ingest end to end: realistic 60-metric messages of 1,000
// concurrent jobs, sent over a real ZeroMQ socket by another process, received,
// decoded, validated and stored into compressed HDF5 files by the collector's
// own code (Collector + Hdf5Sink) on one thread. The figures that matter are
// messages per CPU-second of the collector process (its receiving thread and
// ZeroMQ's I/O thread: what one core would have to do) and of the receiving
// thread alone, counting the writing of the samples' rows to the files (a
// final flush) with the samples; wall-clock rate is reported too. Job starts
// (file creation) and job ends (summary, close) are timed apart and reported
// per job: they happen once per job, samples every period.
#include "BenchMessages.hpp"
#include "collector/Collector.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "common/clock.hpp"
#include "wire/codec.hpp"

#include <benchmark/benchmark.h>
#include <zmq.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace colmet;

namespace {

// The simulated receive clock runs at the target rate (200,000 messages/s);
// the sink's default flush interval.
constexpr int64_t k_sim_ns_per_message = 5'000;
constexpr int64_t k_flush_interval_ns = 5'000'000'000;

double thread_cpu_s()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double process_cpu_s()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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
    // The first warmup samples of each job are timed apart: in them every
    // row buffer and chunk index grows to its working size for the first
    // time (fresh memory, first chunks), which a collector does once.
    const int warmup_per_job = static_cast<int>(state.range(2));
    raise_fd_limit();
    mallopt(M_TRIM_THRESHOLD, 64 << 20);  // as colmet-collector does
    mallopt(M_MMAP_THRESHOLD, 4 << 20);

    // One message template per job (one job per node, as on a cluster of
    // exclusive nodes: node-scope bookkeeping then sees one job per host).
    // The sender process fills in seq, time and values and encodes each
    // message as it sends it, so a long steady phase needs no memory for
    // pre-encoded frames; its CPU is not counted (it is the samplers' work).
    std::vector<wire::Message> templates;
    templates.reserve(static_cast<size_t>(jobs));
    for (int j = 0; j < jobs; ++j) {
        auto m = bench::realistic_message("job-" + std::to_string(j), 0);
        m.host = "node-" + std::to_string(j) + ".cluster.example.org";
        m.sender = m.host + "/31337/1764670000000000000";
        templates.push_back(std::move(m));
    }
    const size_t total_frames = static_cast<size_t>(jobs) * static_cast<size_t>(samples_per_job + 2);
    // Frame i: job_start of every job, then samples interleaved across jobs,
    // then job_end of every job.
    auto encode_frame = [&](size_t i, std::string &out) {
        const size_t n_jobs = static_cast<size_t>(jobs);
        const size_t job = i % n_jobs;
        const uint64_t seq = i / n_jobs;
        wire::Message &m = templates[job];
        bench::set_sample(m, seq);
        m.kind = seq == 0 ? wire::MessageKind::job_start
                          : (seq == static_cast<uint64_t>(samples_per_job + 1) ? wire::MessageKind::job_end
                                                                               : wire::MessageKind::sample);
        if (m.kind == wire::MessageKind::job_start)
            m.meta = {{"user", "bench"}, {"cpus", "4"}};
        else
            m.meta.clear();
        (void)wire::encode(m, out);
    };
    std::string middle_frame;
    encode_frame(total_frames / 2, middle_frame);

    auto dir = std::filesystem::temp_directory_path() / ("colmet-bench-" + std::to_string(getpid()));
    double cpu_start = 0, wall_start = 0, cpu_warmup = 0, wall_warmup = 0, cpu_steady = 0, cpu_flush = 0,
           wall_steady = 0, cpu_end = 0, wall_end = 0, process_steady = 0;
    uint64_t steady_messages = 0, warmup_messages = 0;
    // COLMET_BENCH_PHASES=1 prints when the steady phase ran, for
    // `perf record -k CLOCK_MONOTONIC` + `perf report --time <from>,<to>`.
    const bool print_phases = std::getenv("COLMET_BENCH_PHASES") != nullptr;
    for (auto _ : state) {
        std::filesystem::remove_all(dir);
        collector::Hdf5Options options;
        options.dir = dir;
        options.max_open_files = static_cast<size_t>(jobs) + 16;
        options.flush_interval_s = static_cast<double>(k_flush_interval_ns) / 1e9;
        if (const char *level = std::getenv("COLMET_BENCH_COMPRESSION"))  // else the sink's default
            options.compression_level = std::atoi(level);
        auto sink = collector::make_hdf5_sink(options);
        if (!sink) {
            state.SkipWithError(sink.error().message().c_str());
            return;
        }
        std::vector<std::unique_ptr<collector::Sink>> sinks;
        sinks.push_back(std::move(*sink));
        collector::Collector collector(std::move(sinks));

        // The samplers are another process, so that this process's CPU time
        // is the collector's alone: its receiving thread and ZeroMQ's I/O
        // thread, which reads the TCP stream.
        int pipe_fds[2];
        if (pipe(pipe_fds) != 0) {
            state.SkipWithError("pipe");
            return;
        }
        const pid_t sender = fork();
        if (sender == 0) {
            close(pipe_fds[0]);
            zmq::context_t sender_ctx(1);
            zmq::socket_t push(sender_ctx, zmq::socket_type::push);
            push.set(zmq::sockopt::sndhwm, 100000);
            push.set(zmq::sockopt::linger, -1);
            push.bind("tcp://127.0.0.1:*");
            std::string bound = push.get(zmq::sockopt::last_endpoint);
            bound += '\n';
            if (write(pipe_fds[1], bound.data(), bound.size()) != static_cast<ssize_t>(bound.size()))
                _exit(1);
            close(pipe_fds[1]);
            std::string bytes;
            for (size_t i = 0; i < total_frames; ++i) {
                encode_frame(i, bytes);
                push.send(zmq::buffer(bytes), zmq::send_flags::none);
            }
            push.close();
            sender_ctx.close();  // linger -1: returns once every message is sent
            _exit(0);
        }
        close(pipe_fds[1]);
        std::string endpoint;
        char c = 0;
        while (read(pipe_fds[0], &c, 1) == 1 && c != '\n')
            endpoint += c;
        close(pipe_fds[0]);
        if (sender < 0 || endpoint.empty()) {
            state.SkipWithError("cannot start the sender process");
            return;
        }
        zmq::context_t ctx(1);
        zmq::socket_t pull(ctx, zmq::socket_type::pull);
        pull.set(zmq::sockopt::rcvhwm, 100000);
        pull.connect(endpoint);

        // Four phases, timed apart: job starts (file creation), warm-up
        // samples, the steady stream of samples (the ingest rate), job ends
        // (summaries, closes).
        const size_t starts_end = static_cast<size_t>(jobs);
        const size_t warmup_end = starts_end + static_cast<size_t>(jobs) * static_cast<size_t>(warmup_per_job);
        const size_t samples_end = total_frames - static_cast<size_t>(jobs);
        double cpu_mark = thread_cpu_s();
        double process_mark = process_cpu_s();
        int64_t wall_mark = monotonic_ns();
        // The collector sees a simulated receive clock that advances by
        // k_sim_ns_per_message per message, so that what it does per message
        // (which flushes fall due, how many rows each writes) does not depend
        // on how fast this machine happens to run the loop.
        int64_t sim_now = wall_mark;
        int64_t last_tick = sim_now;
        int64_t steady_from_ns = wall_mark;
        zmq::message_t frame;
        // Steady phase, process CPU: the receiving thread plus ZeroMQ's I/O thread.
        double *process_acc = nullptr;
        auto lap = [&](double &cpu_acc, double &wall_acc) {
            double cpu_now = thread_cpu_s();
            double process_now = process_cpu_s();
            int64_t w = monotonic_ns();
            cpu_acc += cpu_now - cpu_mark;
            if (process_acc)
                *process_acc += process_now - process_mark;
            wall_acc += static_cast<double>(w - wall_mark) / 1e9;
            cpu_mark = cpu_now;
            process_mark = process_now;
            wall_mark = w;
        };
        for (size_t received = 0; received < total_frames; ++received) {
            if (received == starts_end)
                lap(cpu_start, wall_start);
            if (received == warmup_end) {
                lap(cpu_warmup, wall_warmup);
                steady_from_ns = wall_mark;
                process_acc = &process_steady;
            }
            if (received == samples_end) {
                lap(cpu_steady, wall_steady);
                // The rows of the samples are written as part of the steady
                // cost: one flush interval later every job is flushed.
                sim_now += k_flush_interval_ns;
                collector.tick(sim_now);
                last_tick = sim_now;
                lap(cpu_flush, wall_steady);
                process_acc = nullptr;
                if (print_phases)
                    std::fprintf(stderr, "steady phase (CLOCK_MONOTONIC, s): %.6f,%.6f\n",
                                 static_cast<double>(steady_from_ns) / 1e9, static_cast<double>(wall_mark) / 1e9);
            }
            (void)pull.recv(frame, zmq::recv_flags::none);
            sim_now += k_sim_ns_per_message;
            collector.handle_frame(static_cast<const char *>(frame.data()), frame.size(), frame.more(), sim_now);
            if (sim_now - last_tick >= 200'000'000) {
                collector.tick(sim_now);
                last_tick = sim_now;
            }
        }
        collector.close_all();
        lap(cpu_end, wall_end);
        steady_messages += samples_end - warmup_end;
        warmup_messages += warmup_end - starts_end;
        int status = 0;
        waitpid(sender, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            state.SkipWithError("the sender process failed");
        if (collector.stats().accepted != total_frames)
            state.SkipWithError("not every message was accepted");
    }
    if (std::getenv("COLMET_BENCH_KEEP"))  // keep the files of the last iteration (to compare sizes)
        std::fprintf(stderr, "files kept in %s\n", dir.c_str());
    else
        std::filesystem::remove_all(dir);
    auto iterations = static_cast<double>(state.iterations());
    const double steady = static_cast<double>(steady_messages);
    state.counters["msgs_per_cpu_s"] = steady / (cpu_steady + cpu_flush);
    state.counters["msgs_per_wall_s"] = steady / wall_steady;
    // The same messages per CPU-second of the whole collector process
    // (receiving thread + ZeroMQ's I/O thread): what one core would have to do.
    state.counters["msgs_per_process_cpu_s"] = steady / process_steady;
    state.counters["values_per_cpu_s"] = steady * 60 / (cpu_steady + cpu_flush);
    state.counters["us_cpu_receive"] = cpu_steady * 1e6 / steady;  // per message: decode, validate, buffer, due flushes
    state.counters["us_cpu_flush"] = cpu_flush * 1e6 / steady;     // per message: the final flush of its rows
    if (warmup_messages > 0)
        state.counters["warmup_msgs_per_cpu_s"] = static_cast<double>(warmup_messages) / cpu_warmup;
    state.counters["job_start_ms_cpu"] = cpu_start * 1000 / (jobs * iterations);
    state.counters["job_end_ms_cpu"] = cpu_end * 1000 / (jobs * iterations);
    state.counters["frame_bytes"] = static_cast<double>(middle_frame.size());
}
// {jobs, samples per job, of which warm-up}: 1,000 jobs, 2,000 samples each
// (10 s of the simulated clock: about 7 batch flushes per job) after 300 of
// warm-up; the same short burst as before (100 samples, one flush per job);
// a small case.
BENCHMARK(BM_collector_ingest)->Args({1000, 2000, 300})->Args({1000, 100, 0})->Args({100, 50, 0})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
