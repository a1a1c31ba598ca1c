// Makes the seed corpus of fuzz_sink: realistic sequences of colmet-node
// messages (job_start, samples, job_end; two jobs sharing a host, a job on
// two hosts, losses, late metadata, a metric layout that changes, a job idle
// long enough for its file to close), in fuzz_sink's record format.
//   make_sink_seeds DIR     (DIR: tests/fuzz/corpus/sink)
#include "SinkInput.hpp"
#include "wire/codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

using namespace colmet;
using fuzz::After;
using wire::MessageKind;

namespace {

constexpr int64_t k_t0 = 1'796'000'000'000'000'000;  // 2026-11-30, fixed: seeds do not change
constexpr int64_t k_period_ns = 5'000'000'000;

struct Sampler {
    std::string job, host, sender;
    uint64_t seq = 0;
    bool acked = false;  // protocol version 2: asks for acknowledgements
    uint64_t base = 0;
    bool memory_peak = true;  // false: peak unreadable (NaN and a status)
    bool extra_metric = false;

    wire::Message next(MessageKind kind, uint64_t dropped = 0)
    {
        wire::Message m;
        m.kind = kind;
        m.job_id = job;
        m.host = host;
        m.sender = sender;
        m.seq = seq;
        if (acked) {
            m.version = wire::k_acked_protocol_version;
            m.ack = 1;
            m.base = std::min(base, seq);
        }
        m.time_ns = k_t0 + static_cast<int64_t>(seq) * k_period_ns;
        m.dropped = dropped;
        m.period_s = 5;
        const double x = static_cast<double>(seq + 1);
        wire::BackendBlock cpu{.name = "cgroup_cpu", .scope = wire::Scope::job};
        cpu.metrics = {{"usage", "s", wire::MetricKind::counter}, {"user", "s", wire::MetricKind::counter}};
        cpu.values = {0.75 * x, 0.5 * x};
        wire::BackendBlock mem{.name = "cgroup_memory", .scope = wire::Scope::job};
        mem.metrics = {{"current", "B", wire::MetricKind::gauge}, {"peak", "B", wire::MetricKind::gauge}};
        mem.values = {1048576 * x, memory_peak ? 2097152 * x : std::numeric_limits<double>::quiet_NaN()};
        if (!memory_peak)
            mem.status = "memory.peak: No such file or directory";
        if (extra_metric) {
            mem.metrics.push_back({"swap", "B", wire::MetricKind::gauge});
            mem.values.push_back(0);
        }
        wire::BackendBlock temp{.name = "temperature", .scope = wire::Scope::node};
        temp.metrics = {{"package_0", "degC", wire::MetricKind::gauge}};
        temp.values = {41 + std::fmod(x, 7)};
        m.backends = {cpu, mem, temp};
        if (kind == MessageKind::job_start)
            m.meta = {{"user", "alice"}, {"cpus", "4"}, {"cgroup", "/oar/alice_" + job}, {"node_version", "0.1.0"}};
        ++seq;
        return m;
    }
};

class Seed {
public:
    void send(const wire::Message &m, After after = After::nothing)
    {
        std::string frame;
        if (!wire::encode(m, frame)) {
            std::fprintf(stderr, "make_sink_seeds: a message does not encode\n");
            std::exit(1);
        }
        fuzz::append_record(m_bytes, frame, after);
    }
    void control(After after) { fuzz::append_record(m_bytes, {}, after); }
    void save(const std::string &dir, const std::string &name) const
    {
        std::ofstream out(dir + "/" + name, std::ios::binary);
        out.write(m_bytes.data(), static_cast<std::streamsize>(m_bytes.size()));
        if (!out) {
            std::fprintf(stderr, "make_sink_seeds: cannot write %s/%s\n", dir.c_str(), name.c_str());
            std::exit(1);
        }
    }

private:
    std::string m_bytes;
};

Sampler sampler(const std::string &job, const std::string &host)
{
    return Sampler{job, host, host + "/" + job + "/1796000000000000000"};  // <host>/<pid>/<start ns>
}

// One job on one host, start to end, with a tick after each sample.
Seed one_job()
{
    Seed s;
    auto a = sampler("4242", "node-1");
    s.send(a.next(MessageKind::job_start));
    for (int i = 0; i < 4; ++i)
        s.send(a.next(MessageKind::sample), After::tick);
    s.send(a.next(MessageKind::job_end));
    return s;
}

// Job 4300 on two hosts, job 4301 sharing node-1 with it, interleaved; a
// flush_all (SIGHUP) halfway.
Seed two_jobs_two_hosts()
{
    Seed s;
    auto a1 = sampler("4300", "node-1"), a2 = sampler("4300", "node-2"), b = sampler("4301", "node-1");
    s.send(a1.next(MessageKind::job_start));
    s.send(a2.next(MessageKind::job_start));
    s.send(b.next(MessageKind::job_start));
    for (int i = 0; i < 3; ++i) {
        s.send(a1.next(MessageKind::sample));
        s.send(b.next(MessageKind::sample));
        s.send(a2.next(MessageKind::sample), After::tick);
    }
    s.control(After::flush_all);
    s.send(b.next(MessageKind::job_end));
    s.send(a1.next(MessageKind::sample));
    s.send(a2.next(MessageKind::job_end));
    s.send(a1.next(MessageKind::job_end), After::tick);
    return s;
}

// Gaps in seq, counts of messages not queued, a duplicate, metadata that
// arrives later, a value that cannot be read.
Seed losses_and_late_meta()
{
    Seed s;
    auto a = sampler("4400", "node-3");
    s.send(a.next(MessageKind::job_start));
    s.send(a.next(MessageKind::sample));
    a.seq += 3;  // three lost
    auto late = a.next(MessageKind::sample, 2);
    late.meta = {
        {"cgroups", "cpuacct=/sys/fs/cgroup/cpuacct/oar/alice_4400 memory=/sys/fs/cgroup/memory/oar/alice_4400"},
        {"cpus", "8"}};
    s.send(late, After::tick);
    s.send(late);  // a duplicate
    a.memory_peak = false;
    s.send(a.next(MessageKind::sample), After::tick);
    s.send(a.next(MessageKind::job_end));
    return s;
}

// The memory backend gains a metric mid-job (a new segment), and loses it.
Seed metrics_change()
{
    Seed s;
    auto a = sampler("4500", "node-4");
    s.send(a.next(MessageKind::job_start));
    s.send(a.next(MessageKind::sample));
    a.extra_metric = true;
    s.send(a.next(MessageKind::sample));
    s.send(a.next(MessageKind::sample), After::tick);
    a.extra_metric = false;
    s.send(a.next(MessageKind::sample));
    s.send(a.next(MessageKind::job_end), After::tick);
    return s;
}

// More rows than a batch (fuzz_sink writes every 8), then the job goes idle
// long enough for its file to close and be forgotten, and comes back.
Seed idle_and_reopen()
{
    Seed s;
    auto a = sampler("4600", "node-5");
    s.send(a.next(MessageKind::job_start));
    for (int i = 0; i < 20; ++i)
        s.send(a.next(MessageKind::sample));
    s.control(After::idle);
    s.control(After::idle);
    for (int i = 0; i < 3; ++i)
        s.send(a.next(MessageKind::sample), After::tick);
    s.send(a.next(MessageKind::job_end));
    return s;
}

// A sampler ends and another one (a new process: a new sender) starts the
// same job on the same host.
Seed sampler_restart()
{
    Seed s;
    auto a = sampler("4700", "node-6");
    s.send(a.next(MessageKind::job_start));
    s.send(a.next(MessageKind::sample));
    s.send(a.next(MessageKind::job_end), After::tick);
    auto b = sampler("4700", "node-6");
    b.sender = "node-6/4701/1796000000100000000";
    b.seq = 0;
    s.send(b.next(MessageKind::job_start));
    s.send(b.next(MessageKind::sample), After::tick);
    s.send(b.next(MessageKind::job_end));
    return s;
}

// Acknowledged delivery: a gap that waits for the resend, the resend (with
// duplicates), a base that gives messages up, a flush between.
Seed acked_resend()
{
    Seed s;
    auto a = sampler("4800", "node-7");
    a.acked = true;
    s.send(a.next(MessageKind::job_start));
    s.send(a.next(MessageKind::sample), After::flush_all);
    a.seq = 4;
    s.send(a.next(MessageKind::sample), After::tick);  // 2 and 3 missing: waits
    a.seq = 1;
    for (int i = 0; i < 5; ++i)  // the resend from 1: 1 is a duplicate
        s.send(a.next(MessageKind::sample));
    s.control(After::flush_all);
    a.seq = 9;
    a.base = 8;  // 6 and 7 given up
    s.send(a.next(MessageKind::sample));
    a.seq = 8;
    s.send(a.next(MessageKind::sample), After::tick);
    s.send(a.next(MessageKind::sample));
    s.send(a.next(MessageKind::job_end), After::tick);
    return s;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_sink_seeds DIR\n");
        return 64;
    }
    const std::string dir = argv[1];
    one_job().save(dir, "one_job");
    two_jobs_two_hosts().save(dir, "two_jobs_two_hosts");
    losses_and_late_meta().save(dir, "losses_and_late_meta");
    metrics_change().save(dir, "metrics_change");
    idle_and_reopen().save(dir, "idle_and_reopen");
    sampler_restart().save(dir, "sampler_restart");
    acked_resend().save(dir, "acked_resend");
    return 0;
}
