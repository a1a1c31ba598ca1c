#include "node/backends/processes/ProcessesBackend.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/processes/CgroupProcs.hpp"
#include "node/backends/processes/ProcessTracker.hpp"
#include "node/backends/processes/proc_parsers.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <limits>
#include <unistd.h>

namespace colmet::node::backends {
namespace {

constexpr std::string_view k_name = "processes";
enum Index : size_t { k_processes, k_threads, k_first_io };  // then the ProcIo fields in order
constexpr size_t k_expected_processes = 64;

class ProcessesBackend final : public MetricBackend {
public:
    ProcessesBackend(CgroupProcs procs, UniqueFd proc_root)
        : m_procs(std::move(procs)), m_proc_root(std::move(proc_root)), m_tracker(k_expected_processes)
    {
        m_pids.reserve(k_expected_processes);
    }

    std::string_view name() const override { return k_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return processes_metrics(); }

    void sample(std::span<double> values) noexcept override
    {
        std::fill(values.begin(), values.end(), std::numeric_limits<double>::quiet_NaN());
        m_problems.clear();
        if (m_procs.list(m_pids, m_problems) && observe_all()) {
            values[k_processes] = static_cast<double>(m_tracker.processes());
            values[k_threads] = static_cast<double>(m_tracker.threads());
            if (m_tracker.io_complete())
                for (size_t i = 0; i < k_proc_io_fields; ++i)
                    values[k_first_io + i] = static_cast<double>(m_tracker.io_totals()[i]);
        }
        set_status(m_problems.view());
    }

private:
    // Read stat and io of every pid into the tracker. False when the sample
    // could not be completed (out of memory).
    bool observe_all() noexcept
    {
        m_tracker.begin();
        size_t io_failures = 0;
        pid_t first_pid = 0;
        std::string_view first_reason;
        try {
            for (pid_t pid : m_pids) {
                ProcObservation obs;
                obs.pid = pid;
                std::string_view text;
                int err = read_proc(pid, "/stat", text);
                if (err == ENOENT || err == ESRCH)
                    continue;  // exited since cgroup.procs was read
                if (err != 0) {
                    note_stat_failure(pid, errno_text(err));
                    continue;
                }
                auto st = parse_proc_stat(text);
                if (!st) {
                    note_stat_failure(pid, st.error().message());
                    continue;
                }
                obs.ppid = st->ppid;
                obs.threads = st->num_threads;
                obs.starttime = st->starttime;
                err = read_proc(pid, "/io", text);
                if (err == ENOENT || err == ESRCH)
                    continue;
                std::string_view reason = err != 0 ? errno_text(err) : std::string_view();
                if (err == 0) {
                    auto io = parse_proc_io(text);
                    obs.io_read = io.ok();
                    if (io)
                        obs.io = *io;
                    else
                        reason = "unexpected format";
                }
                if (!obs.io_read && io_failures++ == 0) {
                    first_pid = pid;
                    first_reason = reason;
                }
                m_tracker.observe(obs);
            }
        } catch (...) {  // std::bad_alloc growing the tracker: keep the previous state
            m_problems.item("out of memory tracking processes");
            return false;
        }
        m_tracker.end();
        if (io_failures > 0) {
            m_problems.item("pid ").add(static_cast<uint64_t>(first_pid)).add(" io: ").add(first_reason);
            if (io_failures > 1)
                m_problems.add(" (and ").add(io_failures - 1).add(" more)");
        }
        return true;
    }

    void note_stat_failure(pid_t pid, std::string_view why) noexcept
    {
        m_problems.item("pid ").add(static_cast<uint64_t>(pid)).add(" stat: ").add(why);
    }

    // Read <proc_root>/<pid><suffix> into m_buf: 0 or an errno.
    int read_proc(pid_t pid, std::string_view suffix, std::string_view &text) noexcept
    {
        char rel[40];
        auto res = std::to_chars(rel, rel + 20, pid);
        std::copy(suffix.begin(), suffix.end(), res.ptr);
        res.ptr[suffix.size()] = '\0';
        int fd = ::openat(m_proc_root.get(), rel, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return errno;
        UniqueFd guard(fd);
        size_t total = 0;
        while (total < m_buf.size()) {
            ssize_t n = ::read(fd, m_buf.data() + total, m_buf.size() - total);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return errno;
            if (n == 0)
                break;
            total += static_cast<size_t>(n);
        }
        text = std::string_view(m_buf.data(), total);
        return 0;
    }

    CgroupProcs m_procs;
    UniqueFd m_proc_root;
    ProcessTracker m_tracker;
    std::vector<pid_t> m_pids;
    std::array<char, 4096> m_buf{};  // /proc/<pid>/stat and io are well under 1 KiB
    StatusText m_problems;
};

}  // namespace

const std::vector<wire::MetricDescriptor> &processes_metrics()
{
    using wire::MetricKind;
    static const std::vector<wire::MetricDescriptor> k_metrics = {
        {"processes", "1", MetricKind::gauge},
        {"threads", "1", MetricKind::gauge},
        {"read_chars", "B", MetricKind::counter},
        {"write_chars", "B", MetricKind::counter},
        {"read_syscalls", "1", MetricKind::counter},
        {"write_syscalls", "1", MetricKind::counter},
        {"read_bytes", "B", MetricKind::counter},
        {"write_bytes", "B", MetricKind::counter},
        {"cancelled_write_bytes", "B", MetricKind::counter},
    };
    return k_metrics;
}

Result<std::unique_ptr<MetricBackend>> make_processes_backend(const JobContext &ctx)
{
    std::filesystem::path dir;
    if (ctx.cgroup.version == cgroup::Version::v2) {
        dir = ctx.cgroup.unified;
    } else {
        for (std::string_view controller : {"pids", "cpuacct", "memory", "cpu", "blkio", "cpuset"}) {
            dir = ctx.cgroup.dir_for(controller);
            if (!dir.empty())
                break;
        }
    }
    if (dir.empty())
        return Error(Errc::unsupported, std::string(k_name) + ": no cgroup directory lists the job's processes");
    auto procs = CgroupProcs::open(dir);
    if (!procs)
        return Error(Errc::not_found, std::string(k_name) + ": " + procs.error().message(), procs.error().sys_errno());
    int fd = ::open(ctx.proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return Error::system(std::string(k_name) + ": open", ctx.proc_root.string(), errno);
    auto backend = std::make_unique<ProcessesBackend>(std::move(*procs), UniqueFd(fd));
    backend->set_cgroup_dirs({dir});
    return std::unique_ptr<MetricBackend>(std::move(backend));
}

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_processes_factory;
constexpr BackendFactory k_processes_factory =
    job_backend_factory(*spec::backend_info("processes"), &make_processes_backend);

}  // namespace colmet::node::backends
