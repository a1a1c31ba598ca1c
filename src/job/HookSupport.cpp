#include "job/HookSupport.hpp"

#include "cgroup/CgroupFs.hpp"
#include "common/log.hpp"
#include "node/backends/perfhw/perf_mount.hpp"

#include <cerrno>
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

} // namespace

Result<void> remove_created_cgroups(const SamplerRecord &r)
{
    Result<void> first;
    if (r.perf_cgroup_created && !r.perf_root.empty()) {
        if (auto rm = node::backends::perfhw::remove_job_perf_cgroup(r.perf_root, r.cgroup); !rm) {
            spdlog::warn("job {}: cannot remove its perf_event cgroup: {}", r.job_id, rm.error().message());
            first = rm;
        } else {
            spdlog::info("job {}: removed perf_event cgroup {}{}", r.job_id, r.perf_root, r.cgroup);
        }
    }
    if (r.job_cgroup_created)
        if (auto rm = remove_empty_job_dirs(r); !rm && first)
            first = rm;
    return first;
}

} // namespace colmet::job
