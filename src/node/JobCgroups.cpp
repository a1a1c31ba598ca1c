#include "node/JobCgroups.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/ProcCgroup.hpp"
#include "common/file_io.hpp"
#include "common/log.hpp"
#include "node/backends/processes/proc_parsers.hpp"

#include <algorithm>

namespace colmet::node {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_located_pids = 32;  // processes looked at per search
constexpr size_t k_known_pids = 4;         // v2: processes remembered per check

// starttime of a live process, or 0.
uint64_t start_ticks(const fs::path &proc, pid_t pid)
{
    auto text = read_file(proc / std::to_string(pid) / "stat");
    if (!text)
        return 0;
    auto st = backends::parse_proc_stat(*text);
    return st ? st->starttime : 0;
}

// The controllers of one hierarchy, as listed in a CgroupPaths (v1), or "".
std::string controller_of(const cgroup::CgroupPaths &paths, const fs::path &dir)
{
    for (const auto &[name, d] : paths.controllers)
        if (d == dir)
            return name;
    return "";
}

std::string describe_paths(const cgroup::CgroupPaths &paths)
{
    if (paths.version == cgroup::Version::v2)
        return paths.unified.empty() ? std::string("(none yet)") : paths.unified.string();
    std::string out;
    for (const auto &[name, dir] : paths.controllers)
        out += (out.empty() ? "" : " ") + name + "=" + dir.string();
    return out.empty() ? std::string("(none yet)") : out;
}

bool same_dirs(const cgroup::CgroupPaths &a, const cgroup::CgroupPaths &b)
{
    return a.version == b.version && a.unified == b.unified && a.controllers == b.controllers;
}

}  // namespace

JobCgroups::JobCgroups(fs::path cgroup_root, fs::path proc_root, std::string requested,
                       std::optional<std::vector<std::string>> level)
    : m_root(std::move(cgroup_root)), m_proc(std::move(proc_root)), m_requested(std::move(requested))
{
    if (level)
        m_locator.emplace(m_root, m_proc, std::move(*level));
}

Result<void> JobCgroups::start()
{
    cgroup::CgroupFs cgfs(m_root);
    auto resolved = cgfs.resolve(m_requested);
    if (resolved) {
        m_paths = std::move(*resolved);
    } else if (m_locator && resolved.error().code() == Errc::not_found) {
        // Not there yet: the scheduler makes the job's cgroups with its first
        // process. Sampled once a process shows where.
        m_paths = cgroup::CgroupPaths{};
        m_paths.version = cgfs.detect();
        m_paths.relative = m_requested;
    } else {
        return resolved.error();
    }
    m_located = !m_locator;
    watch_current();
    refresh();
    return ok();
}

std::string JobCgroups::describe() const { return describe_paths(m_paths); }

void JobCgroups::watch_current()
{
    m_watched.clear();
    m_empty.clear();
    for (const auto &dir : m_paths.directories()) {
        Watched w;
        w.dir = dir;
        w.controller = m_paths.version == cgroup::Version::v2 ? "unified" : controller_of(m_paths, dir);
        if (auto procs = backends::CgroupProcs::open(dir))
            w.procs.emplace(std::move(*procs));
        m_watched.push_back(std::move(w));
    }
}

std::vector<pid_t> JobCgroups::job_pids()
{
    std::vector<pid_t> all;
    backends::StatusText ignored;
    for (auto &w : m_watched) {
        if (!w.procs || !w.procs->list(m_pids, ignored))
            continue;
        all.insert(all.end(), m_pids.begin(), m_pids.end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    if (all.size() > k_max_located_pids)
        all.resize(k_max_located_pids);
    return all;
}

bool JobCgroups::refresh()
{
    constexpr int k_rechecks = 3;
    if (!m_locator || (m_located && !m_relocate && m_rechecks == 0))
        return false;
    const bool rechecking = m_located && !m_relocate;
    if (rechecking)
        --m_rechecks;
    bool changed = false;
    if (m_watched.empty()) {
        // Nothing to take processes from yet: is the requested cgroup there now?
        if (auto resolved = cgroup::CgroupFs(m_root).resolve(m_requested)) {
            m_paths = std::move(*resolved);
            watch_current();
            changed = true;
        }
    }
    const auto pids = job_pids();
    if (pids.empty())
        return changed;
    auto found = m_locator->locate(pids);
    if (!found)
        return changed;
    // Only colmet's own perf_event directory shows the job: the scheduler
    // has not placed the processes yet (Slurm moves a task into its cpuacct
    // and memory directories just after it starts). Look again next time.
    if (found->version == cgroup::Version::v1 && std::none_of(found->controllers.begin(), found->controllers.end(),
                                                              [](const auto &c) { return c.first != "perf_event"; }))
        return changed;
    // A re-check only adds hierarchies (processes that exited meanwhile must
    // not take directories away).
    if (rechecking && m_paths.version == cgroup::Version::v1 && found->controllers.size() <= m_paths.controllers.size())
        return changed;
    m_relocate = false;
    cgroup::CgroupPaths next = std::move(*found);
    // colmet's own perf_event directory stays what --cgroup named when the
    // processes are not (yet) in it: the counters are opened there.
    if (next.version == cgroup::Version::v1 && next.dir_for("perf_event").empty())
        if (auto perf = m_paths.dir_for("perf_event"); !perf.empty())
            next.controllers.emplace_back("perf_event", perf);
    if (!m_located) {
        spdlog::info("job cgroups found from process {}: {}", pids.front(), describe_paths(next));
        m_rechecks = k_rechecks;
    }
    m_located = true;
    if (same_dirs(next, m_paths))
        return changed;
    m_paths = std::move(next);
    watch_current();
    return true;
}

void JobCgroups::remember_processes()
{
    backends::StatusText ignored;
    for (auto &w : m_watched) {
        if (!w.procs || !w.procs->list(m_pids, ignored, k_known_pids) || m_pids.empty())
            continue;
        // The same processes as last time (the usual case) cost no read.
        m_known_next.clear();
        for (pid_t pid : m_pids) {
            auto same = std::find_if(m_known.begin(), m_known.end(), [pid](const Known &k) { return k.pid == pid; });
            uint64_t start = same != m_known.end() ? same->starttime : start_ticks(m_proc, pid);
            if (start != 0)
                m_known_next.push_back({pid, start});
        }
        m_known.swap(m_known_next);
        return;
    }
}

std::optional<std::string> JobCgroups::moved_out()
{
    std::optional<std::string> found;
    std::vector<Known> alive;
    for (const auto &k : m_known) {
        if (start_ticks(m_proc, k.pid) != k.starttime)
            continue;  // exited (or its pid reused)
        alive.push_back(k);
        if (found)
            continue;
        auto text = read_file(m_proc / std::to_string(k.pid) / "cgroup");
        if (!text)
            continue;
        auto line = cgroup::membership_for(cgroup::parse_proc_cgroup(*text), "");
        if (!line)
            continue;
        const std::string where = (m_root / line->path.substr(line->path.starts_with('/') ? 1 : 0)).string();
        if (std::none_of(m_watched.begin(), m_watched.end(),
                         [&where](const Watched &w) { return cgroup::is_within(where, w.dir.string()); }))
            found = "process " + std::to_string(k.pid) + ", seen there before, is now in " + line->path;
    }
    m_known = std::move(alive);
    return found;
}

void JobCgroups::check()
{
    m_empty.clear();
    bool any_process = false;
    std::vector<size_t> holders(m_watched.size(), 0);
    backends::StatusText ignored;
    // Whether each directory holds a process: the walk stops at the first.
    for (size_t i = 0; i < m_watched.size(); ++i) {
        auto &w = m_watched[i];
        if (w.procs && w.procs->list(m_pids, ignored, 1))
            holders[i] = m_pids.size();
        any_process = any_process || holders[i] > 0;
    }
    // v2: the job's one directory, empty while a process it held lives on
    // elsewhere.
    std::optional<std::string> moved;
    if (m_paths.version == cgroup::Version::v2) {
        if (any_process)
            remember_processes();
        else if (!m_known.empty())
            moved = moved_out();
    }
    std::string text;
    for (size_t i = 0; i < m_watched.size(); ++i) {
        auto &w = m_watched[i];
        // perf_event is colmet's own directory: the hooks move the job's
        // tasks there themselves, so it is evidence, not a suspect.
        if (!w.procs || w.controller == "perf_event" || holders[i] > 0 || (!any_process && !moved)) {
            w.empty_run = 0;
            continue;
        }
        ++w.empty_run;
        if (m_locator)
            m_relocate = true;
        if (w.empty_run < k_empty_samples)
            continue;
        m_empty.push_back(w.dir);
        if (w.warned)
            continue;
        w.warned = true;
        std::string elsewhere = moved.value_or("");
        for (size_t j = 0; j < m_watched.size() && !moved; ++j)
            if (holders[j] > 0 && m_watched[j].procs) {
                (void)m_watched[j].procs->list(m_pids, ignored);  // all of them, for the message only
                elsewhere = m_watched[j].dir.string() + " holds " + std::to_string(m_pids.size());
                break;
            }
        text += (text.empty() ? "" : "; ") + std::string("the ") + w.controller + " directory " + w.dir.string() +
                " holds none of the job's processes (" + elsewhere + "): its values are not the job's";
    }
    if (!text.empty()) {
        m_said += (m_said.empty() ? "" : "; ") + text;
        m_warning = m_warning ? *m_warning + "; " + text : text;
    }
}

std::optional<std::string> JobCgroups::take_warning()
{
    auto w = std::move(m_warning);
    m_warning.reset();
    return w;
}

}  // namespace colmet::node
