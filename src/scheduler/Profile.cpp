#include "scheduler/Profile.hpp"

#include "scheduler/SlurmLayout.hpp"

#include <pwd.h>

namespace colmet::sched {
namespace {

// OAR's own cpuset path, the same in every hierarchy it links
// (job_resource_manager_cgroups.pl): not a guess, nothing to find. OAR's
// hooks pass the path OAR gave them (--cgroup) all the same, which also
// holds an oardocker prefix.
Result<Placement> place_oar(const JobQuery &q)
{
    Placement p;
    p.relative = "/oar/" + q.user + "_" + q.job_id;
    return p;
}

// The job or step directory that slurmstepd makes, found by the sampler from
// the job's processes; on cgroup v1, colmet's own perf_event directory
// (Slurm never makes one), and the job's cgroups made by colmet when Slurm
// keeps none on this node.
Result<Placement> place_slurm(const JobQuery &q)
{
    auto ref = slurm::parse_sampler_id(q.job_id);
    if (!ref)
        return Error::invalid("job id '" + q.job_id + "' is neither a Slurm job id (123) nor a step id (123.4)");
    Placement p;
    p.level = slurm::level(*ref);
    if (q.cgroup_v2) {
        p.relative = slurm::v2_cgroup(q.cgroup_root, *ref);
        p.leaves = slurm::v2_task_leaves(*ref);
        return p;
    }
    passwd pw{};
    passwd *found = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(q.user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return Error::invalid("user '" + q.user +
                              "' is unknown on this node (colmet's perf_event directory is per uid)");
    p.relative = slurm::perf_cgroup(found->pw_uid, *ref);
    auto slurm_root =
        slurm::manages_cgroups(q.cgroup_root, q.made_by_colmet ? q.made_by_colmet() : std::vector<std::string>{});
    p.scheduler_cgroups = slurm_root.has_value();
    p.note = slurm_root ? "Slurm keeps cgroups of its own here (" + slurm_root->string() +
                              "): colmet makes only its perf_event directory"
                        : "Slurm keeps no cgroups here: colmet makes the job's";
    return p;
}

}  // namespace

const std::vector<Profile> &profiles()
{
    static const std::vector<Profile> k_profiles = {
        {"oar", "oar = /oar/<user>_<job>", &place_oar},
        {"slurm",
         "slurm = the job (123) or step (123.4) where Slurm put its processes, colmet's perf_event directory "
         "/slurm/uid_<uid>/job_<job>",
         &place_slurm},
    };
    return k_profiles;
}

const Profile *find_profile(std::string_view name)
{
    for (const auto &p : profiles())
        if (p.name == name)
            return &p;
    return nullptr;
}

std::vector<std::string> profile_names()
{
    std::vector<std::string> out;
    for (const auto &p : profiles())
        out.emplace_back(p.name);
    return out;
}

}  // namespace colmet::sched
