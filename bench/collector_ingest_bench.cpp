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
// With the fourth argument 1 the connection is CURVE, as between a node and
// a collector with keys: encrypted, authenticated by the collector's ZAP
// handler, and every message's host checked against the sender's key.
// With the sixth argument 1 the messages ask for acknowledgements (protocol
// version 2): the collector takes the acknowledgements its sink hands out
// and publishes them on a PUB socket, as serve() does after every batch it
// drains, to a SUB socket in the sender process.
#include "BenchMessages.hpp"
#include "auth/CurveKeys.hpp"
#include "collector/Collector.hpp"
#include "collector/security/ZapHandler.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "collector/sinks/tsdb/TsdbSink.hpp"
#include "common/clock.hpp"
#include "wire/ack.hpp"
#include "wire/codec.hpp"

#include <benchmark/benchmark.h>
#include <zmq.hpp>

#include <arpa/inet.h>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

// A "<key>: <n> kB" line of /proc/self/status (VmRSS, VmHWM), in KiB.
double status_kib(const std::string &key)
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind(key + ":", 0) == 0)
            return std::atof(line.c_str() + key.size() + 1);
    return 0;
}

void raise_fd_limit()
{
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

}  // namespace

// A time-series store that accepts every request and keeps nothing: a
// forked process (its CPU is not the collector's), one keep-alive
// connection at a time, 204 to every POST. Returns its pid; *port is set.
static pid_t start_discard_store(int *port)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        listen(listener, 16) != 0 || getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
        return -1;
    *port = ntohs(addr.sin_port);
    const pid_t pid = fork();
    if (pid != 0) {
        close(listener);
        return pid;
    }
    std::vector<char> buf(1 << 20);
    while (true) {
        int conn = accept(listener, nullptr, nullptr);
        if (conn < 0)
            continue;
        std::string head;
        size_t body_left = 0;
        bool in_body = false;
        while (true) {
            const ssize_t n = read(conn, buf.data(), buf.size());
            if (n <= 0)
                break;
            size_t at = 0;
            while (at < static_cast<size_t>(n)) {
                if (in_body) {
                    const size_t take = std::min(body_left, static_cast<size_t>(n) - at);
                    body_left -= take;
                    at += take;
                } else {
                    head.push_back(buf[at++]);
                    if (head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0) {
                        std::string lower = head;
                        for (char &c : lower)
                            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                        const size_t cl = lower.find("content-length:");
                        body_left = cl == std::string::npos ? 0 : std::strtoull(lower.c_str() + cl + 15, nullptr, 10);
                        in_body = true;
                        head.clear();
                    }
                }
                if (in_body && body_left == 0) {
                    static const char k_answer[] = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
                    if (write(conn, k_answer, sizeof k_answer - 1) < 0)
                        break;
                    in_body = false;
                }
            }
        }
        close(conn);
    }
}

static void BM_collector_ingest(benchmark::State &state)
{
    const int jobs = static_cast<int>(state.range(0));
    const int samples_per_job = static_cast<int>(state.range(1));
    // The first warmup samples of each job are timed apart: in them every
    // row buffer and chunk index grows to its working size for the first
    // time (fresh memory, first chunks), which a collector does once.
    const int warmup_per_job = static_cast<int>(state.range(2));
    const bool curve = state.range(3) != 0;
    const bool tsdb = state.range(4) != 0;   // the time-series sink too, posting to a store that discards
    const bool acked = state.range(5) != 0;  // acknowledged delivery
    int store_port = 0;
    const pid_t store = tsdb ? start_discard_store(&store_port) : 0;
    if (store < 0) {
        state.SkipWithError("cannot start the discarding store");
        return;
    }
    collector::tsdb::SenderStats tsdb_stats;
    double process_total = 0;
    auto collector_keys = auth::generate_key_pair();
    auto node_keys = auth::generate_key_pair();
    if (curve && (!collector_keys || !node_keys)) {
        state.SkipWithError("no CURVE keys (libzmq without libsodium?)");
        return;
    }
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
        if (acked) {
            m.version = wire::k_acked_protocol_version;
            m.ack = 1;
        }
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
        m.base = acked ? seq : 0;  // nothing held for resending: every earlier one was acknowledged
        m.kind = seq == 0 ? wire::MessageKind::job_start
                          : (seq == static_cast<uint64_t>(samples_per_job) + 1 ? wire::MessageKind::job_end
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
    const double rss_before_kib = status_kib("VmRSS");
    uint64_t sink_peak_bytes = 0;
    double cpu_start = 0, wall_start = 0, cpu_warmup = 0, wall_warmup = 0, cpu_steady = 0, cpu_flush = 0,
           wall_steady = 0, cpu_end = 0, wall_end = 0, process_steady = 0;
    uint64_t steady_messages = 0, warmup_messages = 0, acks_total = 0;
    // COLMET_BENCH_PHASES=1 prints when the steady phase ran, for
    // `perf record -k CLOCK_MONOTONIC` + `perf report --time <from>,<to>`.
    const bool print_phases = std::getenv("COLMET_BENCH_PHASES") != nullptr;
    for (auto _ : state) {
        std::filesystem::remove_all(dir);
        collector::Hdf5Options options;
        options.dir = dir;
        options.max_open_files = static_cast<size_t>(jobs) + 16;
        // Room for every file open and 256 rows buffered per segment, as
        // max_open_files: the CPU figures then count no file reopening.
        // COLMET_BENCH_BUDGET_MIB=256 measures the default budget instead.
        options.memory_budget_bytes = (static_cast<uint64_t>(jobs) + 256) << 20;
        if (const char *budget = std::getenv("COLMET_BENCH_BUDGET_MIB"))
            options.memory_budget_bytes = std::strtoull(budget, nullptr, 10) << 20;
        options.flush_interval_s = static_cast<double>(k_flush_interval_ns) / 1e9;
        if (const char *level = std::getenv("COLMET_BENCH_COMPRESSION"))  // else the sink's default
            options.compression_level = std::atoi(level);
        auto sink = collector::make_hdf5_sink(options);
        if (!sink) {
            state.SkipWithError(sink.error().message().c_str());
            return;
        }
        const collector::Hdf5Sink *hdf5_sink = sink->get();
        std::vector<std::unique_ptr<collector::Sink>> sinks;
        sinks.push_back(std::move(*sink));
        const collector::tsdb::TsdbSink *tsdb_sink = nullptr;
        if (tsdb) {
            collector::tsdb::TsdbOptions t;
            t.http.url = "http://127.0.0.1:" + std::to_string(store_port) + "/api/v1/write";
            t.http.queue_bytes = std::getenv("COLMET_BENCH_QUEUE_MIB")
                                     ? std::strtoull(std::getenv("COLMET_BENCH_QUEUE_MIB"), nullptr, 10) << 20
                                     : 1ULL << 30;  // nothing dropped: every point is encoded and posted
            t.stop_grace_s = 600;
            t.cluster = "bench";
            if (const char *points = std::getenv("COLMET_BENCH_TSDB_BATCH"))  // else the sink's default
                t.batch_points = std::strtoull(points, nullptr, 10);
            if (std::getenv("COLMET_BENCH_TSDB_DISCARD")) {
                // The sink's work on the receiving thread alone: each batch
                // body is made, then dropped (no sender thread, no HTTP).
                auto made = collector::tsdb::TsdbSink::with_submit(t, [](const std::string &, uint64_t, uint64_t) {
                    return std::optional(collector::tsdb::BatchFate::stored);
                });
                tsdb_sink = made.get();
                sinks.push_back(std::move(made));
            } else {
                auto made = collector::tsdb::TsdbSink::make(t);
                if (!made) {
                    state.SkipWithError(made.error().message().c_str());
                    return;
                }
                tsdb_sink = made->get();
                sinks.push_back(std::move(*made));
            }
        }
        // The messages carry fixed times (BenchMessages.hpp): no clock check.
        collector::Collector collector(std::move(sinks), {.max_clock_skew_s = 0});
        auto registry = std::make_shared<auth::NodeKeys>();
        if (curve) {
            for (const auto &m : templates)  // one node key, listed for every host
                registry->add({m.host, node_keys->public_key});
            collector.set_node_keys(registry);
        }

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
            if (curve) {
                push.set(zmq::sockopt::curve_serverkey, collector_keys->public_key);
                push.set(zmq::sockopt::curve_publickey, node_keys->public_key);
                push.set(zmq::sockopt::curve_secretkey, node_keys->secret_key);
            }
            push.bind("tcp://127.0.0.1:*");
            std::string bound = push.get(zmq::sockopt::last_endpoint);
            zmq::socket_t acks_in(sender_ctx, zmq::socket_type::sub);
            if (acked) {  // the samplers' side of the acknowledgements
                acks_in.set(zmq::sockopt::subscribe, "");
                acks_in.bind("tcp://127.0.0.1:*");
                bound += " " + acks_in.get(zmq::sockopt::last_endpoint);
            }
            bound += '\n';
            if (write(pipe_fds[1], bound.data(), bound.size()) != static_cast<ssize_t>(bound.size()))
                _exit(1);
            close(pipe_fds[1]);
            std::string bytes;
            zmq::message_t ack;
            uint64_t acks_received = 0;
            for (size_t i = 0; i < total_frames; ++i) {
                encode_frame(i, bytes);
                push.send(zmq::buffer(bytes), zmq::send_flags::none);
                while (acked && acks_in.recv(ack, zmq::recv_flags::dontwait))
                    ++acks_received;
            }
            push.close();
            acks_in.close();
            sender_ctx.close();  // linger -1: returns once every message is sent
            _exit(0);
        }
        close(pipe_fds[1]);
        std::string endpoint;
        char c = 0;
        while (read(pipe_fds[0], &c, 1) == 1 && c != '\n')
            endpoint += c;
        close(pipe_fds[0]);
        std::string ack_endpoint;
        if (const size_t space = endpoint.find(' '); space != std::string::npos) {
            ack_endpoint = endpoint.substr(space + 1);
            endpoint.resize(space);
        }
        if (sender < 0 || endpoint.empty()) {
            state.SkipWithError("cannot start the sender process");
            return;
        }
        zmq::context_t ctx(1);
        zmq::socket_t zap(ctx, zmq::socket_type::rep);
        collector::ZapHandler zap_handler(registry);
        if (curve)
            zap.bind(collector::k_zap_endpoint);
        zmq::socket_t pull(ctx, zmq::socket_type::pull);
        pull.set(zmq::sockopt::rcvhwm, 100000);
        if (curve) {
            pull.set(zmq::sockopt::curve_server, true);
            pull.set(zmq::sockopt::curve_secretkey, collector_keys->secret_key);
            pull.set(zmq::sockopt::zap_domain, "colmet");
        }
        pull.connect(endpoint);
        zmq::socket_t acks_out(ctx, zmq::socket_type::pub);
        std::vector<wire::Ack> due;
        uint64_t acks_published = 0;
        auto publish_acks = [&] {
            if (!acked)
                return;
            collector.take_acks(due);
            for (const auto &a : due) {
                const std::string ack_frame = wire::encode_ack(a.sender, a.seq);
                if (acks_out.send(zmq::buffer(ack_frame), zmq::send_flags::dontwait))
                    ++acks_published;
            }
            due.clear();
        };
        if (acked) {
            acks_out.set(zmq::sockopt::sndhwm, 10000);
            acks_out.set(zmq::sockopt::linger, 0);  // as serve()'s 200 ms: the samplers are gone at the end
            acks_out.connect(ack_endpoint);
        }
        if (curve) {  // the one handshake: the collector's ZAP handler lets the node in
            std::vector<std::string> request;
            zmq::message_t part;
            do {
                (void)zap.recv(part, zmq::recv_flags::none);
                request.emplace_back(static_cast<const char *>(part.data()), part.size());
            } while (part.more());
            auto reply = zap_handler.answer(request);
            for (size_t i = 0; i < reply.size(); ++i)
                zap.send(zmq::buffer(reply[i]),
                         i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }

        // Four phases, timed apart: job starts (file creation), warm-up
        // samples, the steady stream of samples (the ingest rate), job ends
        // (summaries, closes).
        const size_t starts_end = static_cast<size_t>(jobs);
        const size_t warmup_end = starts_end + static_cast<size_t>(jobs) * static_cast<size_t>(warmup_per_job);
        const size_t samples_end = total_frames - static_cast<size_t>(jobs);
        double cpu_mark = thread_cpu_s();
        double process_mark = process_cpu_s();
        const double process_first = process_mark;
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
            const char *key = curve ? zmq_msg_gets(frame.handle(), "User-Id") : nullptr;
            collector.handle_frame(static_cast<const char *>(frame.data()), frame.size(), frame.more(), sim_now,
                                   key ? std::string_view(key) : std::string_view());
            if (sim_now - last_tick >= 200'000'000) {
                collector.tick(sim_now);
                last_tick = sim_now;
            }
            if (received % 1000 == 999)  // serve() publishes after each batch it drains
                publish_acks();
        }
        sink_peak_bytes = std::max(sink_peak_bytes, hdf5_sink->stats().memory_peak_bytes);
        collector.close_all();  // with the time-series sink: every batch posted
        publish_acks();
        lap(cpu_end, wall_end);
        acks_total += acks_published;
        process_total += process_cpu_s() - process_first;
        if (tsdb_sink)
            tsdb_stats = tsdb_sink->stats();
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
    // Every message of the run (starts, samples, ends) per CPU-second of the
    // whole process, from the first job start until every file is closed and,
    // with the time-series sink, every batch posted: the figure to compare
    // with and without it.
    state.counters["msgs_per_process_cpu_s_all"] = static_cast<double>(total_frames) * iterations / process_total;
    if (tsdb) {
        state.counters["tsdb_points_sent"] = static_cast<double>(tsdb_stats.points_sent);
        state.counters["tsdb_points_dropped"] = static_cast<double>(tsdb_stats.points_dropped);
        kill(store, SIGKILL);
        waitpid(store, nullptr, 0);
    }
    state.counters["values_per_cpu_s"] = steady * 60 / (cpu_steady + cpu_flush);
    state.counters["us_cpu_receive"] = cpu_steady * 1e6 / steady;  // per message: decode, validate, buffer, due flushes
    state.counters["us_cpu_flush"] = cpu_flush * 1e6 / steady;     // per message: the final flush of its rows
    if (warmup_messages > 0)
        state.counters["warmup_msgs_per_cpu_s"] = static_cast<double>(warmup_messages) / cpu_warmup;
    state.counters["job_start_ms_cpu"] = cpu_start * 1000 / (jobs * iterations);
    state.counters["job_end_ms_cpu"] = cpu_end * 1000 / (jobs * iterations);
    state.counters["frame_bytes"] = static_cast<double>(middle_frame.size());
    if (acked)
        state.counters["acks_published"] = static_cast<double>(acks_total) / iterations;
    // Memory: the process's peak resident set (VmHWM: run one benchmark at a
    // time for this figure), above what it held before, per job; and the
    // sink's own estimate at its peak (what --memory-budget bounds).
    state.counters["peak_rss_mib"] = status_kib("VmHWM") / 1024;
    state.counters["peak_rss_kib_per_job"] = (status_kib("VmHWM") - rss_before_kib) / jobs;
    state.counters["sink_peak_estimate_mib"] = static_cast<double>(sink_peak_bytes) / (1 << 20);
}

// Memory per open job: N jobs started (job_start and one 60-metric sample
// each, so every segment exists), then N more, into one sink with its
// defaults (256 open files at most, a 256 MiB budget). The resident set
// grows by open_job_kib per job between the two counts: what one more open
// job costs above a fixed base (the library, the open files, the codec).
// Also the sink's own estimate per job, and the base at the first count.
static void BM_memory_per_open_job(benchmark::State &state)
{
    const int first = static_cast<int>(state.range(0));
    const int second = static_cast<int>(state.range(1));
    raise_fd_limit();
    mallopt(M_TRIM_THRESHOLD, 64 << 20);  // as colmet-collector does
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    auto dir = std::filesystem::temp_directory_path() / ("colmet-bench-mem-" + std::to_string(getpid()));
    double per_job_kib = 0, estimate_kib = 0, base_mib = 0, open_files = 0;
    for (auto _ : state) {
        std::filesystem::remove_all(dir);
        const double rss0 = status_kib("VmRSS");
        collector::Hdf5Options options;
        options.dir = dir;
        auto made = collector::make_hdf5_sink(options);
        if (!made) {
            state.SkipWithError(made.error().message().c_str());
            return;
        }
        auto &sink = **made;
        int64_t now = monotonic_ns();
        auto open_jobs = [&](int from, int to) {
            for (int j = from; j < to; ++j) {
                auto m = bench::realistic_message("job-" + std::to_string(j), 0);
                m.host = "node-" + std::to_string(j) + ".cluster.example.org";
                m.kind = wire::MessageKind::job_start;
                m.meta = {{"user", "bench"}, {"cpus", "4"}};
                sink.consume(m, collector::Delivery{0, now += 5'000});
                bench::set_sample(m, 1);
                m.kind = wire::MessageKind::sample;
                m.meta.clear();
                sink.consume(m, collector::Delivery{0, now += 5'000});
            }
        };
        open_jobs(0, first);
        const double rss1 = status_kib("VmRSS");
        const double est1 = static_cast<double>(sink.stats().memory_estimate_bytes) / 1024;
        open_jobs(first, second);
        const double rss2 = status_kib("VmRSS");
        const double est2 = static_cast<double>(sink.stats().memory_estimate_bytes) / 1024;
        if (sink.open_jobs() != static_cast<size_t>(second))
            state.SkipWithError("not every job stayed open");
        per_job_kib = (rss2 - rss1) / (second - first);
        estimate_kib = (est2 - est1) / (second - first);
        base_mib = (rss1 - rss0 - per_job_kib * first) / 1024;
        open_files = static_cast<double>(sink.open_files());
        sink.close_all();
    }
    std::filesystem::remove_all(dir);
    state.counters["open_job_kib"] = per_job_kib;
    state.counters["estimate_kib_per_job"] = estimate_kib;
    state.counters["base_mib"] = base_mib;
    state.counters["open_files"] = open_files;
}
// {jobs, samples per job, of which warm-up, CURVE, time-series sink}: 1,000 jobs, 2,000
// samples each (10 s of the simulated clock: about 7 batch flushes per job)
// after 300 of warm-up; the same short burst as before (100 samples, one
// flush per job); a small case; and the same load without and with CURVE,
// and with the time-series sink, back to back.
BENCHMARK(BM_collector_ingest)
    ->Args({1000, 2000, 300, 0, 0, 0})
    ->Args({1000, 100, 0, 0, 0, 0})
    ->Args({1000, 100, 0, 0, 1, 0})
    ->Args({100, 50, 0, 0, 0, 0})
    ->Args({100, 200, 0, 0, 1, 0})
    ->Args({100, 50, 0, 0, 0, 1})
    ->Args({1000, 500, 100, 0, 0, 0})
    ->Args({1000, 500, 100, 1, 0, 0})
    ->Args({1000, 500, 100, 0, 1, 0})
    ->Args({1000, 500, 100, 0, 0, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_memory_per_open_job)->Args({1000, 2000})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
