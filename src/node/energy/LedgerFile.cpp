#include "node/energy/LedgerFile.hpp"

#include "common/file_io.hpp"
#include "node/JobContext.hpp"
#include "node/backends/cgroup_cpu/CgroupCpuBackend.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

namespace colmet::node::energy {

namespace {

constexpr double k_unread = std::numeric_limits<double>::quiet_NaN();  // a job whose CPU time cannot be read
// The lock is held for a few reads and one write; a sampler waits for it at
// most this long, then skips the ledger for this sample.
constexpr auto k_lock_wait = std::chrono::milliseconds(500);

bool alive(int64_t pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

int64_t now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

LedgerFile::LedgerFile(std::filesystem::path path, std::vector<LedgerCounter> counters,
                       const std::filesystem::path &proc_root)
    : m_path(std::move(path)), m_counters(std::move(counters)), m_stat(proc_root)
{
    for (const auto &c : m_counters)
        m_files.emplace_back(c.energy_file);
}

Result<UniqueFd> LedgerFile::lock()
{
    const std::string lock_path = m_path.string() + ".lock";
    UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid() && errno == ENOENT && make_dir(m_path.parent_path()))
        fd = UniqueFd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid())
        return Error::system("open", lock_path, errno);
    const auto give_up = std::chrono::steady_clock::now() + k_lock_wait;
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return Error::system("flock", lock_path, errno);
        if (std::chrono::steady_clock::now() >= give_up)
            return Error::system("flock", lock_path + " (held for over 500 ms)", EWOULDBLOCK);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return fd;
}

Result<LedgerState> LedgerFile::load(backends::StatusText &problems)
{
    auto text = read_file(m_path);
    if (!text) {
        if (text.error().code() == Errc::system && text.error().sys_errno() == ENOENT)
            return LedgerState{};
        return text.error();
    }
    auto state = parse_ledger(*text);
    if (!state) {
        problems.item("energy ledger started afresh: ").add(state.error().message());
        return LedgerState{};
    }
    return state;
}

// In place, under the lock: a new file renamed over the old one would make
// ext4 write it out at once (auto_da_alloc), which stalls every sampler of
// the node behind a busy disk; a ledger cut short by a crash is started
// afresh by the next update.
Result<void> LedgerFile::store(const LedgerState &state)
{
    UniqueFd fd(::open(m_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid())
        return Error::system("open", m_path.string(), errno);
    const std::string text = format_ledger(state);
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::pwrite(fd.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return Error::system("write", m_path.string(), n < 0 ? errno : ENOSPC);
        done += static_cast<size_t>(n);
    }
    if (::ftruncate(fd.get(), static_cast<off_t>(text.size())) != 0)
        return Error::system("truncate", m_path.string(), errno);
    return {};
}

bool LedgerFile::same_counters(const LedgerState &state) const
{
    if (state.domains.size() != m_counters.size())
        return false;
    for (size_t i = 0; i < m_counters.size(); ++i)
        if (state.domains[i].metric != m_counters[i].metric ||
            state.domains[i].file != m_counters[i].energy_file.string())
            return false;
    return true;
}

double LedgerFile::read_cpu(const LedgerJob &job, backends::StatusText &problems)
{
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto &reader = m_cpu_readers[job.cpu.dir];
        if (!reader) {
            JobContext ctx;
            ctx.job_id = job.id;
            ctx.cgroup.version = job.cpu.v2 ? cgroup::Version::v2 : cgroup::Version::v1;
            if (job.cpu.v2)
                ctx.cgroup.unified = job.cpu.dir;
            else
                ctx.cgroup.controllers = {{"cpuacct", job.cpu.dir}};
            ctx.cpu_leaves = job.cpu.leaves;
            auto made = backends::make_cgroup_cpu_backend(ctx);
            if (!made) {  // the job's cgroup is gone
                m_cpu_readers.erase(job.cpu.dir);
                break;
            }
            reader = std::move(*made);
        }
        m_cpu_values.assign(reader->metrics().size(), k_unread);
        reader->sample(m_cpu_values);
        if (!m_cpu_values.empty() && !std::isnan(m_cpu_values[0]))
            return m_cpu_values[0];  // "usage", in seconds
        // Removed, or a new cgroup of the same name: open it again once.
        m_cpu_readers.erase(job.cpu.dir);
    }
    problems.item("energy ledger: the CPU time of job ").add(job.id).add(" is unreadable: it leaves the ledger");
    return k_unread;
}

Result<LedgerView> LedgerFile::update(const LedgerSelf &self, bool leaving, backends::StatusText &problems)
{
    auto held = lock();
    if (!held)
        return held.error();
    auto loaded = load(problems);
    if (!loaded)
        return loaded.error();
    LedgerState state = std::move(*loaded);
    if (!same_counters(state)) {
        const bool in_use =
            std::any_of(state.jobs.begin(), state.jobs.end(), [](const LedgerJob &j) { return alive(j.pid); });
        if (in_use)
            return Error::invalid("the energy ledger " + m_path.string() +
                                  " counts other RAPL files, for samplers still running");
        state = LedgerState{};
        for (const auto &c : m_counters)
            state.domains.push_back({c.metric, c.energy_file.string(), 0, c.max_range_uj, 0, 0, 0});
    }

    NodeReading now;
    now.time_ns = now_ns();
    now.raw_uj.resize(m_counters.size());
    now.have_raw.resize(m_counters.size());
    for (size_t i = 0; i < m_files.size(); ++i) {
        if (auto uj = m_files[i].read_u64()) {
            now.raw_uj[i] = *uj;
            now.have_raw[i] = true;
        } else {
            problems.item("energy ledger: ")
                .add(m_counters[i].metric)
                .add(": ")
                .add(backends::errno_text(m_files[i].error()));
        }
    }
    if (state.start_ns == 0)  // new: each counter starts from what it reads now
        for (size_t i = 0; i < m_counters.size(); ++i)
            state.domains[i].raw_uj = now.raw_uj[i];
    CpuTimes node;
    if (!m_stat.read(node, problems))
        return Error(Errc::system, "energy ledger: /proc/stat unreadable");
    now.busy_s = node.busy_s;
    now.cpus = node.cpus;
    now.job_cpu_s.reserve(state.jobs.size());
    for (const auto &j : state.jobs)
        now.job_cpu_s.push_back(alive(j.pid) ? read_cpu(j, problems) : k_unread);

    const int64_t prev_ns = state.time_ns;
    const double prev_busy = state.busy_s;
    advance_ledger(state, now);

    LedgerView view;
    view.busy_s = node.busy_s;
    view.cpus = node.cpus;
    if (prev_ns > 0 && now.time_ns > prev_ns && node.cpus > 0)
        view.utilisation = std::clamp(
            (node.busy_s - prev_busy) / (node.cpus * static_cast<double>(now.time_ns - prev_ns) / 1e9), 0.0, 1.0);
    LedgerJob *mine = state.find(self.id, self.pid);
    if (!mine && !leaving) {
        if (auto ok = check_ledger_job(self.id, self.cpu); !ok)
            return ok.error();
        LedgerJob j;
        j.id = self.id;
        j.pid = self.pid;
        j.allocated_cpus = self.allocated_cpus;
        j.cpu = self.cpu;
        j.cpu_s = read_cpu(j, problems);
        if (std::isnan(j.cpu_s))
            return Error(Errc::not_found, "energy ledger: the job's own CPU time is unreadable");
        j.shares_j.assign(state.domains.size(), 0.0);
        state.jobs.push_back(std::move(j));
        mine = &state.jobs.back();
        view.entered = true;
    }
    if (mine) {
        mine->allocated_cpus = self.allocated_cpus;
        view.shares_j = mine->shares_j;
        if (leaving)
            retire_job(state, static_cast<size_t>(mine - state.jobs.data()));
    }
    view.jobs = state.jobs.size();
    // Readers of jobs no longer in the ledger are closed.
    for (auto it = m_cpu_readers.begin(); it != m_cpu_readers.end();)
        it = std::any_of(state.jobs.begin(), state.jobs.end(),
                         [&](const LedgerJob &j) { return j.cpu.dir == it->first; })
                 ? std::next(it)
                 : m_cpu_readers.erase(it);
    if (auto stored = store(state); !stored)
        return stored.error();
    return view;
}

void LedgerFile::leave(const LedgerSelf &self)
{
    auto held = lock();
    if (!held)
        return;
    backends::StatusText ignored;
    auto state = load(ignored);
    if (!state)
        return;
    for (size_t k = 0; k < state->jobs.size(); ++k)
        if (state->jobs[k].id == self.id && state->jobs[k].pid == self.pid) {
            retire_job(*state, k);
            (void)store(*state);
            return;
        }
}

}  // namespace colmet::node::energy
