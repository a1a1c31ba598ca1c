// A scheduler as colmet-job start sees it: where it puts a job's processes
// and whether it makes the job's cgroups itself. One profile per scheduler
// (OAR, Slurm), in one table; the hooks name theirs with --scheduler. A new
// scheduler (PBS/Torque, Flux) is one more profile here plus its hook
// scripts. Pure but for the user lookup Slurm's cgroup v1 layout needs.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::sched {

// What colmet-job knows of the job and the node when it asks.
struct JobQuery {
    std::string job_id;
    std::string user;
    std::filesystem::path cgroup_root;  // where the hierarchies are mounted
    bool cgroup_v2 = false;             // the node's cgroup version
    // Top-level levels colmet made itself ("/slurm"): read from the sampler
    // records, so asked for only by a profile that needs it.
    std::function<std::vector<std::string>()> made_by_colmet;
};

// Where the job is, and who makes its cgroups.
struct Placement {
    std::string relative;             // colmet-node's --cgroup (Slurm on v1: colmet's perf_event directory)
    std::string level;                // colmet-node's --find-cgroup; empty: `relative` is the job's everywhere
    bool scheduler_cgroups = true;    // the scheduler makes them: colmet makes only its perf_event directory
    std::vector<std::string> leaves;  // colmet-node's --cgroup-leaves (v2): where the job's own CPU time is
    std::string note;                 // why, for the debug log (empty: nothing to say)
};

struct Profile {
    std::string_view name;    // --scheduler's value
    std::string_view layout;  // one line for --help
    Result<Placement> (*place)(const JobQuery &);
};

// oar, slurm.
const std::vector<Profile> &profiles();

// The profile of that name, or nullptr.
const Profile *find_profile(std::string_view name);

// Their names, for an option's check ("oar", "slurm").
std::vector<std::string> profile_names();

}  // namespace colmet::sched
