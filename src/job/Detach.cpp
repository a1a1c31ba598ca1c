#include "job/Detach.hpp"

#include "cgroup/CgroupFs.hpp"
#include "launch/Launch.hpp"

namespace colmet::job {

Result<pid_t> spawn_detached(const std::vector<std::string> &argv, const std::filesystem::path &cgroup_root)
{
    launch::LaunchSpec spec;
    spec.argv = argv;
    spec.detach = true;
    spec.session = launch::Session::own_session;
    for (const auto &p : cgroup::CgroupFs(cgroup_root).root_procs_files())
        spec.join_cgroups.push_back(p.string());
    spec.workdir = "/";
    spec.umask = 022;
    spec.term_blocked = true;
    return launch::launch(spec);
}

}  // namespace colmet::job
