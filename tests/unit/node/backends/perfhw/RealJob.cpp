#include "RealJob.hpp"

#include "FakeTree.hpp"
#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <limits>

namespace colmet::test {
namespace {

namespace fs = std::filesystem;
using perf::PerfEventSpec;

int64_t cpu_ns()
{
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Only async-signal-safe calls after fork().
[[noreturn]] void burner_main(int go_fd, int report_fd, int burn_ms)
{
    char c;
    if (::read(go_fd, &c, 1) != 1)
        ::_exit(1);
    int64_t until = cpu_ns() + static_cast<int64_t>(burn_ms) * 1'000'000;
    int64_t now = 0;
    do
        now = cpu_ns();
    while (now < until);
    if (::write(report_fd, &now, sizeof now) != static_cast<ssize_t>(sizeof now))
        ::_exit(2);
    for (;;)
        ::pause();
}

}  // namespace

std::string live_skip_reason()
{
    if (!is_root())
        return "needs root (cgroups and perf events in cgroup mode)";
    cgroup::CgroupFs fs(k_cgroup_root);
    if (fs.detect() != cgroup::Version::v1)
        return "needs a cgroup v1 (or hybrid) layout at " + k_cgroup_root.string();
    if (!std::filesystem::exists(k_cgroup_root / "cpuacct/cpuacct.usage"))
        return "no cgroup v1 cpuacct hierarchy at " + k_cgroup_root.string();
    return {};
}

PerfEventSpec software_event(std::string name, uint64_t config)
{
    PerfEventSpec e;
    e.name = std::move(name);
    e.type = PERF_TYPE_SOFTWARE;
    e.config = config;
    return e;
}

PerfEventSpec task_clock()
{
    PerfEventSpec e = software_event("task_clock", PERF_COUNT_SW_TASK_CLOCK);
    e.unit = "s";
    e.scale = 1e-9;
    return e;
}

PerfEventSpec hardware_event(std::string name, uint64_t config)
{
    PerfEventSpec e;
    e.name = std::move(name);
    e.type = PERF_TYPE_HARDWARE;
    e.config = config;
    return e;
}

size_t count_perf_fds()
{
    size_t n = 0;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator("/proc/self/fd", ec)) {
        auto target = fs::read_symlink(entry.path(), ec);
        if (!ec && target == "anon_inode:[perf_event]")
            ++n;
    }
    return n;
}

double cpu_seconds_of(pid_t pid)
{
    auto text = read_file("/proc/" + std::to_string(pid) + "/schedstat");
    if (!text)
        return std::numeric_limits<double>::quiet_NaN();
    auto ns = text::parse_u64(std::string_view(*text).substr(0, text->find(' ')));
    return ns ? static_cast<double>(*ns) * 1e-9 : std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> sample(node::MetricBackend &backend)
{
    std::vector<double> v(backend.metrics().size(), -1.0);
    backend.sample(v);
    return v;
}

double value(const node::MetricBackend &backend, const std::vector<double> &values, std::string_view metric)
{
    const auto &m = backend.metrics();
    for (size_t i = 0; i < m.size(); ++i)
        if (m[i].name == metric)
            return values[i];
    return -12345.0;  // no such metric: fails every expectation
}

RealJob::RealJob(std::string_view name)
    : m_relative("/colmet-perfcount-" + std::to_string(::getpid()) + "-" + std::string(name))
{
    // Every directory the job may get, so the destructor removes them even
    // when create() stopped half-way.
    cgroup::CgroupFs fs(k_cgroup_root);
    m_paths.version = cgroup::Version::v1;
    m_paths.relative = m_relative;
    for (const auto &c : fs.mounted_v1_controllers())
        m_paths.controllers.emplace_back(c, k_cgroup_root / c / m_relative.substr(1));
}

RealJob::~RealJob()
{
    for (pid_t pid : m_children) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    (void)cgroup::CgroupFs::remove(m_paths);
    // The perf_event directory made by the backend factory, if any.
    if (fs::exists(k_cgroup_root / "perf_event/cgroup.procs"))
        (void)cgroup::remove_job_perf_cgroup(k_cgroup_root / "perf_event", m_relative);
}

Result<void> RealJob::create()
{
    auto made = cgroup::CgroupFs(k_cgroup_root).create(m_relative);
    if (!made)
        return made.error();
    m_paths = std::move(*made);
    return ok();
}

node::JobContext RealJob::context() const
{
    node::JobContext ctx;
    ctx.job_id = name();
    ctx.cgroup = m_paths;
    return ctx;
}

Result<pid_t> RealJob::spawn_burner(int burn_ms)
{
    int go[2];
    int report[2];
    if (::pipe2(go, O_CLOEXEC) != 0)
        return Error::system("pipe2", "", errno);
    UniqueFd go_read(go[0]);
    m_go_write.reset(go[1]);
    if (::pipe2(report, O_CLOEXEC) != 0)
        return Error::system("pipe2", "", errno);
    m_report_read.reset(report[0]);
    UniqueFd report_write(report[1]);
    pid_t pid = ::fork();
    if (pid < 0)
        return Error::system("fork", "", errno);
    if (pid == 0)
        burner_main(go_read.get(), report_write.get(), burn_ms);
    m_children.push_back(pid);
    if (auto r = cgroup::CgroupFs::attach(m_paths, pid); !r)
        return r.error();
    return pid;
}

pid_t RealJob::spawn_spinner()
{
    pid_t pid = ::fork();
    if (pid == 0) {
        volatile uint64_t spins = 0;
        for (;;)
            spins = spins + 1;
    }
    if (pid > 0)
        m_children.push_back(pid);
    return pid;
}

void RealJob::go()
{
    if (::write(m_go_write.get(), "g", 1) != 1)
        m_go_write.reset();
}

double RealJob::wait_report(int timeout_ms)
{
    pollfd pfd{m_report_read.get(), POLLIN, 0};
    int64_t ns = 0;
    if (::poll(&pfd, 1, timeout_ms) != 1 || ::read(m_report_read.get(), &ns, sizeof ns) != sizeof ns)
        return std::numeric_limits<double>::quiet_NaN();
    return static_cast<double>(ns) * 1e-9;
}

}  // namespace colmet::test
