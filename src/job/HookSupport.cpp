#include "job/HookSupport.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "common/log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace colmet::job {
namespace fs = std::filesystem;

void setup_command_log(const std::string &log_file, bool hook, int verbosity)
{
    std::error_code ec;
    fs::create_directories(fs::path(log_file).parent_path(), ec);
    log::setup_hook("job", verbosity + 1, log_file, !hook);
}

namespace {

// rmdir the job's directory in every hierarchy where it is empty; a
// directory that still holds processes is the scheduler's to clean.
Result<void> remove_empty_job_dirs(const SamplerRecord &r)
{
    cgroup::CgroupFs fs(r.cgroup_root);
    auto paths = fs.resolve(r.cgroup);
    if (!paths)
        return paths.error().code() == Errc::not_found ? ok() : Result<void>(paths.error());
    Result<void> first;
    auto try_rmdir = [&](const fs::path &dir) {
        if (dir.empty())
            return;
        if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
            auto e = Error::system("rmdir", dir.string(), errno);
            spdlog::warn("job {}: {}", r.job_id, e.message());
            if (first)
                first = e;
        }
    };
    if (paths->version == cgroup::Version::v2)
        try_rmdir(paths->unified);
    else
        for (const auto &[controller, dir] : paths->controllers)
            if (controller != "perf_event")
                try_rmdir(dir);
    return first;
}

// rmdir the levels above the job's directory that start created (up to
// r.created_from), in every hierarchy, from the lowest up; a level that
// still holds a directory, or is another recorded job's cgroup (a Slurm
// job's, under which its steps were sampled), stays, and so do those above.
void remove_created_parents(const SamplerRecord &r, const fs::path &run_dir)
{
    const std::string &top = r.created_from;
    if (top.empty() || !cgroup_below(r.cgroup, top))
        return;  // not an ancestor of the job's cgroup: a record from elsewhere
    std::vector<std::string> others;
    for (const auto &[path, other] : list_records(run_dir))
        if (other && other->job_id != r.job_id && other->cgroup_root == r.cgroup_root)
            others.push_back(other->cgroup);
    cgroup::CgroupFs cgfs(r.cgroup_root);
    for (std::string level = r.cgroup.substr(0, r.cgroup.rfind('/')); level.size() >= top.size();
         level = level.substr(0, level.rfind('/'))) {
        if (std::any_of(others.begin(), others.end(),
                        [&](const std::string &c) { return c == level || cgroup_below(c, level); })) {
            spdlog::info("job {}: leaving cgroup level {}: it is or holds another running job's cgroup", r.job_id,
                         level);
            return;
        }
        auto paths = cgfs.resolve(level);
        if (!paths)
            continue;  // gone from every hierarchy already
        bool busy = false;
        for (const auto &dir : paths->directories())
            if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
                busy = true;
                spdlog::info("job {}: leaving cgroup {} ({})", r.job_id, dir.string(), std::strerror(errno));
            }
        if (busy)
            return;
        spdlog::info("job {}: removed cgroup level {} that start created", r.job_id, level);
    }
}

}  // namespace

bool cgroup_below(std::string_view path, std::string_view level)
{
    return path.size() > level.size() && path.compare(0, level.size(), level) == 0 && path[level.size()] == '/';
}

Result<void> remove_created_cgroups(const SamplerRecord &r, const fs::path &run_dir)
{
    Result<void> first;
    if (r.perf_cgroup_created && !r.perf_root.empty()) {
        if (auto rm = cgroup::remove_job_perf_cgroup(r.perf_root, r.cgroup); !rm) {
            spdlog::warn("job {}: cannot remove its perf_event cgroup: {}", r.job_id, rm.error().message());
            first = rm;
        } else {
            spdlog::info("job {}: removed perf_event cgroup {}{}", r.job_id, r.perf_root, r.cgroup);
        }
    }
    if (r.job_cgroup_created) {
        auto rm = remove_empty_job_dirs(r);
        if (rm)
            remove_created_parents(r, run_dir);
        else if (first)
            first = rm;
    }
    return first;
}

}  // namespace colmet::job
