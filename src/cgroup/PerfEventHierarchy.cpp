#include "cgroup/PerfEventHierarchy.hpp"

#include "cgroup/CgroupFs.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"
#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace colmet::cgroup {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view k_controller = "perf_event";

bool is_hierarchy(const fs::path &dir) { return path_exists(dir / "cgroup.procs"); }

// A v1 directory of <root> whose comma-separated name lists perf_event
// ("perf_event", "net_cls,perf_event"), mounted.
fs::path find_v1_hierarchy(const fs::path &root)
{
    if (is_hierarchy(root / k_controller))
        return root / k_controller;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(root, ec)) {
        std::string name = entry.path().filename().string();
        for (size_t pos = 0; pos <= name.size();) {
            size_t comma = std::min(name.find(',', pos), name.size());
            if (std::string_view(name).substr(pos, comma - pos) == k_controller && is_hierarchy(entry.path()))
                return entry.path();
            pos = comma + 1;
        }
    }
    return {};
}

// "/oar/alice_42" -> "oar/alice_42"; empty or with ".." components -> error.
Result<fs::path> checked_relative(std::string_view relative)
{
    fs::path rel = fs::path(relative).relative_path().lexically_normal();
    if (rel.empty() || rel == ".")
        return Error::invalid("perf_event cgroup: empty job path");
    for (const auto &part : rel)
        if (part == "..")
            return Error::invalid("perf_event cgroup: '..' in job path '" + std::string(relative) + "'");
    return rel;
}

}  // namespace

Result<fs::path> ensure_perf_event_hierarchy(const fs::path &cgroup_root)
{
    if (path_exists(cgroup_root / "cgroup.controllers"))
        return cgroup_root;  // v2: perf_event is implicit
    if (auto found = find_v1_hierarchy(cgroup_root); !found.empty())
        return found;

    // Serialise with other colmet processes doing the same, then look again.
    UniqueFd root_fd(::open(cgroup_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd.valid())
        return Error::system("open", cgroup_root.string(), errno);
    if (::flock(root_fd.get(), LOCK_EX) != 0)
        return Error::system("flock", cgroup_root.string(), errno);
    if (auto found = find_v1_hierarchy(cgroup_root); !found.empty())
        return found;

    fs::path dir = cgroup_root / k_controller;
    if (auto r = make_dir(dir); !r)
        return r.error().with_context("mounting the perf_event cgroup hierarchy");
    if (::mount("cgroup", dir.c_str(), "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, "perf_event") != 0) {
        int err = errno;
        std::string hint;
        if (err == EPERM)
            hint = " (needs CAP_SYS_ADMIN)";
        else if (err == EBUSY)
            hint = " (perf_event mounted elsewhere together with other controllers?)";
        else if (err == ENOENT || err == ENODEV)
            hint = " (kernel without CONFIG_CGROUP_PERF?)";
        auto e = Error::system("mount -t cgroup -o perf_event cgroup", dir.string(), err);
        return Error(Errc::system, "perfhw: mounting the perf_event cgroup hierarchy: " + e.message() + hint, err);
    }
    if (!is_hierarchy(dir))
        return Error(Errc::internal, "perfhw: mounted perf_event at " + dir.string() + " but it has no cgroup.procs");
    return dir;
}

Result<fs::path> ensure_job_perf_cgroup(const fs::path &perf_root, std::string_view relative)
{
    auto rel = checked_relative(relative);
    if (!rel)
        return rel.error();
    fs::path dir = perf_root;
    for (const auto &part : *rel) {
        dir /= part;
        if (auto r = make_dir(dir); !r)
            return r.error().with_context("creating the job's perf_event cgroup");
    }
    return dir;
}

Result<void> move_procs_into(const fs::path &perf_dir, std::span<const pid_t> pids)
{
    fs::path procs = perf_dir / "cgroup.procs";
    UniqueFd fd(::open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid())
        return Error::system("open", procs.string(), errno);
    for (pid_t pid : pids) {
        std::string text = std::to_string(pid);
        // One pid per write(): cgroupfs takes one pid per write call.
        if (::write(fd.get(), text.data(), text.size()) < 0 && errno != ESRCH)
            return Error::system("write " + text + " to", procs.string(), errno);
    }
    return ok();
}

Result<size_t> move_job_procs(const CgroupPaths &paths, const fs::path &perf_dir)
{
    size_t moved = 0;
    for (int round = 0; round < 4; ++round) {
        std::set<pid_t> job;
        for (const auto &[controller, dir] : paths.controllers) {
            if (controller == k_controller || dir.empty())
                continue;
            if (auto pids = read_pids(dir / "cgroup.procs"))
                job.insert(pids->begin(), pids->end());
        }
        if (job.empty())
            break;
        auto there = read_pids(perf_dir / "cgroup.procs");
        if (!there)
            return there.error();
        for (pid_t pid : *there)
            job.erase(pid);
        if (job.empty())
            break;
        const std::vector<pid_t> missing(job.begin(), job.end());
        if (auto r = move_procs_into(perf_dir, missing); !r)
            return r.error();
        moved += missing.size();
    }
    return moved;
}

Result<void> remove_job_perf_cgroup(const fs::path &perf_root, std::string_view relative, int timeout_ms)
{
    auto rel = checked_relative(relative);
    if (!rel)
        return rel.error();
    fs::path dir = perf_root / *rel;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT)
            return ok();
        int err = errno;
        if (err != EBUSY || std::chrono::steady_clock::now() >= deadline)
            return Error::system("rmdir", dir.string(), err);
        // Tasks left: hand them back to the root (they stop being counted).
        if (auto pids = read_pids(dir / "cgroup.procs"); pids && !pids->empty())
            (void)move_procs_into(perf_root, *pids);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace colmet::cgroup
