// Cost of one sample of one job with the cgroup and processes backends, next
// to a floor that does only the bare system calls on the same files in the
// same run (kept descriptors read with pread, cgroup.procs and the job's
// directory read, /proc/<pid>/{stat,io} opened, read and closed). The ratio
// sampler/floor is the figure that matters (target: at most 1.5).
//
// Needs root: it creates a real cgroup and puts a 4-thread process in it.
#include "cgroup/CgroupFs.hpp"
#include "node/Sampler.hpp"
#include "node/backends/registry.hpp"
#include "wire/codec.hpp"

#include <benchmark/benchmark.h>

#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace colmet;

namespace {

class NullTransport : public node::Transport {
public:
    bool send(std::string_view) noexcept override { return true; }
};

// Acknowledged delivery without a network: every message is acknowledged at
// the next look, as a collector that keeps up would (seq counts sends).
class AckingTransport : public node::Transport {
public:
    bool send(std::string_view) noexcept override
    {
        ++m_sent;
        return true;
    }
    bool acknowledged() const noexcept override { return true; }
    node::TransportEvents events() noexcept override
    {
        node::TransportEvents e;
        if (m_sent > 0)
            e.acked = m_sent - 1;
        return e;
    }

private:
    uint64_t m_sent = 0;
};

// A job cgroup with one 4-thread process sleeping in it.
struct BenchJob {
    cgroup::CgroupPaths paths;
    pid_t child = -1;
    bool ok = false;

    BenchJob()
    {
        cgroup::CgroupFs fs;
        auto created = fs.create("/colmet-bench/job-" + std::to_string(getpid()));
        if (!created)
            return;
        paths = *created;
        child = fork();
        if (child == 0) {
            std::thread a([] { pause(); }), b([] { pause(); }), c([] { pause(); });
            pause();
            _exit(0);
        }
        ok = cgroup::CgroupFs::attach(paths, child).ok();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ~BenchJob()
    {
        if (child > 0) {
            kill(child, SIGKILL);
            waitpid(child, nullptr, 0);
        }
        if (!paths.relative.empty())
            (void)cgroup::CgroupFs::remove(paths);
        for (const auto &[name, dir] : paths.controllers)
            ::rmdir(dir.parent_path().c_str());
    }
};

BenchJob &job()
{
    static BenchJob j;
    return j;
}

// The cgroup files the backends keep open, per cgroup version.
std::vector<std::filesystem::path> kept_files(const cgroup::CgroupPaths &p)
{
    std::vector<std::filesystem::path> files;
    auto add = [&](const char *ctrl, const char *name) {
        auto dir = p.dir_for(ctrl);
        if (!dir.empty() && std::filesystem::exists(dir / name))
            files.push_back(dir / name);
    };
    if (p.version == cgroup::Version::v2) {
        for (const char *f : {"cpu.stat", "memory.current", "memory.peak", "memory.stat", "io.stat"})
            add("", f);
    } else {
        for (const char *f : {"cpuacct.usage", "cpuacct.usage_user", "cpuacct.usage_sys"})
            add("cpuacct", f);
        add("cpu", "cpu.stat");
        for (const char *f : {"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.stat"})
            add("memory", f);
        add("blkio", "blkio.throttle.io_service_bytes_recursive");
        add("blkio", "blkio.throttle.io_serviced_recursive");
    }
    return files;
}

}  // namespace

static void BM_floor_bare_reads(benchmark::State &state)
{
    auto &j = job();
    if (!j.ok) {
        state.SkipWithError("cannot create a cgroup (run as root)");
        return;
    }
    std::vector<int> fds;
    for (const auto &f : kept_files(j.paths))
        fds.push_back(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
    auto procs_dir = j.paths.version == cgroup::Version::v2 ? j.paths.unified : j.paths.dir_for("pids");
    if (procs_dir.empty())
        procs_dir = j.paths.dir_for("cpuacct");
    int dirfd = ::open(procs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int procfd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char buf[16384];
    char dents[2048];
    for (auto _ : state) {
        for (int fd : fds)
            benchmark::DoNotOptimize(::pread(fd, buf, sizeof buf, 0));
        int pfd = ::openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        ssize_t n = ::read(pfd, buf, sizeof buf);
        ::close(pfd);
        ::lseek(dirfd, 0, SEEK_SET);
        while (::syscall(SYS_getdents64, dirfd, dents, sizeof dents) > 0) {
        }
        // One pid per line; the same two files the processes backend reads.
        long pid = 0;
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (buf[i] - '0');
                continue;
            }
            if (pid > 0) {
                char path[64];
                char small[1024];
                for (const char *file : {"stat", "io"}) {
                    std::snprintf(path, sizeof path, "%ld/%s", pid, file);
                    int fd = ::openat(procfd, path, O_RDONLY | O_CLOEXEC);
                    benchmark::DoNotOptimize(::read(fd, small, sizeof small));
                    ::close(fd);
                }
            }
            pid = 0;
        }
    }
    for (int fd : fds)
        ::close(fd);
    ::close(dirfd);
    ::close(procfd);
}
BENCHMARK(BM_floor_bare_reads);

// A sampler of the bench job with every job backend, sending to `transport`;
// null (and the benchmark skipped) without the job's cgroup.
static std::unique_ptr<node::Sampler> bench_sampler(benchmark::State &state, std::unique_ptr<node::Transport> transport)
{
    auto &j = job();
    if (!j.ok) {
        state.SkipWithError("cannot create a cgroup (run as root)");
        return nullptr;
    }
    node::JobContext ctx{"bench", j.paths, "/proc", {}};
    std::vector<std::unique_ptr<node::MetricBackend>> backends;
    for (const auto &f : node::job_backends()) {
        auto b = f.make_for_job(ctx);
        if (b)
            backends.push_back(std::move(*b));
    }
    node::SamplerConfig config;
    config.job_id = "bench";
    config.host = "bench-host";
    config.period_s = 1;
    return std::make_unique<node::Sampler>(config, std::move(backends), std::move(transport));
}

static void BM_sampler_one_sample(benchmark::State &state)
{
    auto sampler = bench_sampler(state, std::make_unique<NullTransport>());
    if (!sampler)
        return;
    std::string bytes;
    for (auto _ : state) {
        sampler->sample_once(wire::MessageKind::sample);
        benchmark::DoNotOptimize(wire::encode(sampler->message(), bytes));
    }
    state.counters["metrics"] = 0;
    for (const auto &b : sampler->message().backends)
        state.counters["metrics"] += static_cast<double>(b.metrics.size());
}
BENCHMARK(BM_sampler_one_sample);

// One period's whole work through Sampler::step(): sample, encode, send;
// with acknowledged delivery (range 1) also the outbox (a copy of the
// encoded bytes kept until acknowledged, the base patched in place) and the
// acknowledgement taken in.
static void BM_sampler_step(benchmark::State &state)
{
    const bool acked = state.range(0) != 0;
    std::unique_ptr<node::Transport> transport;
    if (acked)
        transport = std::make_unique<AckingTransport>();
    else
        transport = std::make_unique<NullTransport>();
    auto sampler = bench_sampler(state, std::move(transport));
    if (!sampler)
        return;
    for (auto _ : state)
        sampler->step(wire::MessageKind::sample);
    if (acked && sampler->outbox()->size() > 1)
        state.SkipWithError("the outbox kept acknowledged messages");
}
BENCHMARK(BM_sampler_step)->Arg(0)->Arg(1);

BENCHMARK_MAIN();
