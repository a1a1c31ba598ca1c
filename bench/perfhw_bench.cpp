// Per-sample cost of the perfhw backend for 5 software events on every CPU
// of the job's cpuset (all CPUs of the machine here), next to a floor that
// only does the bare read() calls on the same perf fds in the same run: one
// PERF_FORMAT_GROUP read per CPU group. The ratio sample/floor is the
// figure that matters (target: at most 1.3); after the Google Benchmark
// runs, the two are also timed interleaved, round after round, and the
// median ratio is printed, which holds better on a noisy machine.
//
// Needs root: it creates a real job cgroup (cgroup v1: and its perf_event
// directory), puts a sleeping process in it and opens perf events in cgroup
// mode. Software events only, so it runs without a hardware PMU.
#include "cgroup/CgroupFs.hpp"
#include "node/backends/perfhw/PerfhwBackend.hpp"
#include "perf/PerfEventSpec.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <dirent.h>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace colmet;
namespace perfhw = colmet::node::backends::perfhw;

namespace {

const char *const k_events[] = {"task_clock", "cpu_clock", "page_faults", "context_switches", "cpu_migrations"};

std::set<int> perf_fds()
{
    std::set<int> fds;
    if (DIR *d = ::opendir("/proc/self/fd")) {
        while (dirent *e = ::readdir(d)) {
            char link[128] = {};
            std::string path = std::string("/proc/self/fd/") + e->d_name;
            ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
            if (n > 0 && std::string_view(link, static_cast<size_t>(n)).find("perf_event") != std::string_view::npos)
                fds.insert(std::atoi(e->d_name));
        }
        ::closedir(d);
    }
    return fds;
}

// A job cgroup with a sleeping process, and the perfhw backend counting it.
struct BenchJob {
    cgroup::CgroupPaths paths;
    pid_t child = -1;
    std::unique_ptr<node::MetricBackend> backend;
    perfhw::PerfhwBackend *perf = nullptr;
    std::vector<int> group_fds;  // one fd per CPU group: what the floor reads
    size_t group_size = 0;
    std::string problem;

    BenchJob()
    {
        cgroup::CgroupFs fs;
        auto created = fs.create("/colmet-bench/perfhw-" + std::to_string(getpid()));
        if (!created) {
            problem = "cannot create a cgroup (run as root): " + created.error().message();
            return;
        }
        paths = *created;
        child = fork();
        if (child == 0) {
            pause();
            _exit(0);
        }
        if (auto r = cgroup::CgroupFs::attach(paths, child); !r) {
            problem = r.error().message();
            return;
        }
        std::vector<perf::PerfEventSpec> specs;
        for (const char *name : k_events) {
            auto spec = perf::resolve_event(name);
            if (!spec) {
                problem = spec.error().message();
                return;
            }
            specs.push_back(*spec);
        }
        auto before = perf_fds();
        auto made = perfhw::make_perfhw_backend(node::JobContext{"bench", paths, "/proc", {}}, specs);
        if (!made) {
            problem = "perfhw: " + made.error().message();
            return;
        }
        backend = std::move(*made);
        perf = static_cast<perfhw::PerfhwBackend *>(backend.get());
        // The backend's fds, in the order they were opened: per CPU the
        // group's leader, then its members (all software events share one
        // group). A PERF_FORMAT_GROUP read() of any member reads the whole
        // group, so the floor reads the first fd of each group.
        std::vector<int> mine;
        for (int fd : perf_fds())
            if (!before.count(fd))
                mine.push_back(fd);
        size_t groups = 0;
        for (const auto &c : perf->counters().open_cpus())
            groups += c.groups;
        if (groups == 0 || mine.size() != perf->counters().fd_count() || mine.size() % groups != 0) {
            problem = "unexpected fd layout: " + std::to_string(mine.size()) + " fds in " + std::to_string(groups) +
                      " groups";
            return;
        }
        group_size = mine.size() / groups;
        for (size_t i = 0; i < mine.size(); i += group_size)
            group_fds.push_back(mine[i]);
    }

    ~BenchJob()
    {
        std::filesystem::path perf_dir = perf ? perf->perf_dir() : std::filesystem::path();
        backend.reset();  // counters disabled, reset and closed
        if (child > 0) {
            kill(child, SIGKILL);
            waitpid(child, nullptr, 0);
        }
        if (!paths.relative.empty())
            (void)cgroup::CgroupFs::remove(paths);
        for (const auto &[name, dir] : paths.controllers)
            ::rmdir(dir.parent_path().c_str());
        if (!perf_dir.empty() && perf_dir != paths.unified) {
            ::rmdir(perf_dir.c_str());
            ::rmdir(perf_dir.parent_path().c_str());
        }
    }

    bool ok() const { return problem.empty(); }

    void floor_once(uint64_t *buf)
    {
        const size_t bytes = (3 + group_size) * sizeof(uint64_t);
        for (int fd : group_fds)
            benchmark::DoNotOptimize(::read(fd, buf, bytes));
    }
};

BenchJob &job()
{
    static BenchJob j;
    return j;
}

}  // namespace

static void BM_floor_bare_reads(benchmark::State &state)
{
    auto &j = job();
    if (!j.ok()) {
        state.SkipWithError(j.problem.c_str());
        return;
    }
    uint64_t buf[64];
    for (auto _ : state)
        j.floor_once(buf);
    state.counters["reads"] = static_cast<double>(j.group_fds.size());
}
BENCHMARK(BM_floor_bare_reads);

static void BM_perfhw_sample(benchmark::State &state)
{
    auto &j = job();
    if (!j.ok()) {
        state.SkipWithError(j.problem.c_str());
        return;
    }
    std::vector<double> values(j.perf->metrics().size());
    for (auto _ : state) {
        j.perf->sample(values);
        benchmark::DoNotOptimize(values.data());
    }
    state.counters["cpus"] = static_cast<double>(j.perf->cpus().size());
    state.counters["fds"] = static_cast<double>(j.perf->counters().fd_count());
}
BENCHMARK(BM_perfhw_sample);

// Both timed alternately in rounds of `n` calls; returns the median ratio.
static void interleaved_ratio()
{
    auto &j = job();
    if (!j.ok())
        return;
    using clock = std::chrono::steady_clock;
    constexpr int k_rounds = 31;
    constexpr int n = 5000;
    uint64_t buf[64];
    std::vector<double> values(j.perf->metrics().size());
    std::vector<double> floor_ns, sample_ns, ratios;
    for (int r = 0; r < k_rounds; ++r) {
        auto t0 = clock::now();
        for (int i = 0; i < n; ++i)
            j.floor_once(buf);
        auto t1 = clock::now();
        for (int i = 0; i < n; ++i) {
            j.perf->sample(values);
            benchmark::DoNotOptimize(values.data());
        }
        auto t2 = clock::now();
        double f = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
        double s = std::chrono::duration<double, std::nano>(t2 - t1).count() / n;
        floor_ns.push_back(f);
        sample_ns.push_back(s);
        ratios.push_back(s / f);
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::printf("\ninterleaved, %d rounds of %d: floor %.0f ns, perfhw sample %.0f ns per sample "
                "(%zu events x %zu CPUs, %zu group reads); median ratio %.3f (target <= 1.3)\n",
                k_rounds, n, median(floor_ns), median(sample_ns), std::size(k_events), j.perf->cpus().size(),
                j.group_fds.size(), median(ratios));
}

int main(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    interleaved_ratio();
    benchmark::Shutdown();
    return 0;
}
