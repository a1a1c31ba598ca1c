#include "scheduler/Profile.hpp"

#include "scheduler/SlurmLayout.hpp"

#include <pwd.h>

namespace colmet::sched {
namespace {

// The uid of a user name, for the layouts that name the job by uid.
Result<uid_t> uid_of(const std::string &user, std::string_view why)
{
    passwd pw{};
    passwd *found = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return Error::invalid("user '" + user + "' is unknown on this node (" + std::string(why) + ")");
    return found->pw_uid;
}

bool is_dir(const std::filesystem::path &p)
{
    std::error_code ec;
    return std::filesystem::is_directory(p, ec);
}

// OAR 2.5 (cgroup v1): its own cpuset path, the same in every hierarchy it
// links (job_resource_manager_cgroups.pl): not a guess, nothing to find.
// OAR's hooks pass the path OAR gave them (--cgroup) all the same, which
// also holds an oardocker prefix.
//
// OAR on cgroup v2 (OAR 2.6 and OAR 3, whose job resource managers leave the
// cgroups to systemd), in the order looked for, the first that exists:
//  - oar.slice/oar-u<uid>.slice/oar-u<uid>-j<job>.slice (the systemd job
//    resource manager of OAR 2.6 and OAR 3's NixOS one; the job's processes
//    in scopes below it);
//  - <user>_<job>.slice (OAR 3's job_resource_manager_systemd.pl, its
//    processes in <user>_<job>.service);
//  - oar.slice/<user>_<job>.scope (OAR 3's cgroups-v2 job resource manager);
//  - oar/<user>_<job> (OAR 2.5's path, made on v2 by a site's own manager);
// the first when none exists yet (the last when the user has no uid here).
Result<Placement> place_oar(const JobQuery &q)
{
    Placement p;
    const std::string name = q.user + "_" + q.job_id;
    if (!q.cgroup_v2) {
        p.relative = "/oar/" + name;
        return p;
    }
    std::vector<std::string> layouts;
    const auto uid = uid_of(q.user, "OAR's cgroup v2 slices are named by uid");
    if (uid) {
        const std::string u = std::to_string(*uid);
        layouts.push_back("/oar.slice/oar-u" + u + ".slice/oar-u" + u + "-j" + q.job_id + ".slice");
    }
    layouts.insert(layouts.end(), {"/" + name + ".slice", "/oar.slice/" + name + ".scope", "/oar/" + name});
    p.relative = uid ? layouts.front() : layouts.back();
    for (const auto &layout : layouts)
        if (is_dir(q.cgroup_root / layout.substr(1))) {
            p.relative = layout;
            break;
        }
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
    auto uid = uid_of(q.user, "colmet's perf_event directory is per uid");
    if (!uid)
        return uid.error();
    p.relative = slurm::perf_cgroup(*uid, *ref);
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
        {"oar",
         "oar = /oar/<user>_<job> (v1); on v2 oar.slice/oar-u<uid>.slice/oar-u<uid>-j<job>.slice, <user>_<job>.slice, "
         "oar.slice/<user>_<job>.scope or oar/<user>_<job>, the first that exists",
         &place_oar},
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
