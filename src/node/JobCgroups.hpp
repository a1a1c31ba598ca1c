// The job's cgroup directories as the sampler uses them, kept true to where
// the job's processes really are.
//
// Without a level, the directories are the ones --cgroup names (colmet-job
// run, OAR's JRM, a manual colmet-node). With a level (--find-cgroup), they
// are found from the processes under --cgroup (on cgroup v1, colmet's own
// perf_event directory, where the scheduler hooks put every task) through
// /proc/<pid>/cgroup: each hierarchy gets the directory the scheduler put
// the job in there. Until a process exists the sampler waits (the Slurm job
// prolog starts it before the job's first task).
//
// Every period it also checks that each directory it reads holds some of the
// job's processes: a directory that holds none, for k_empty_samples samples
// in a row while another directory of the job holds some, means the numbers
// read there are not the job's. On cgroup v2, where the job has one
// directory, the evidence is a process the directory held before that is
// alive in another cgroup now (moved out, e.g. by systemd-run or a user's
// own tool). That is logged once, reported with the values (backend
// status) and recorded in the job's file.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "cgroup/JobLocator.hpp"
#include "common/result.hpp"
#include "node/backends/processes/CgroupProcs.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace colmet::node {

class JobCgroups {
public:
    static constexpr int k_empty_samples = 2;

    // requested: --cgroup; level: parsed --find-cgroup, or nullopt.
    JobCgroups(std::filesystem::path cgroup_root, std::filesystem::path proc_root, std::string requested,
               std::optional<std::vector<std::string>> level);

    // The first resolution, at start. Without a level a missing cgroup is an
    // error; with one the sampler may start before the job's cgroups exist.
    Result<void> start();

    const cgroup::CgroupPaths &paths() const { return m_paths; }
    // True once the directories come from a process of the job (always true
    // without a level).
    bool located() const { return m_located; }
    // "cpuacct=/slurm_n1/uid_5/job_7 memory=... perf_event=/slurm/uid_5/job_7".
    std::string describe() const;

    // Before a sample: look for the job's directories again when it is due
    // (not located yet, the few samples after the first location, or a
    // directory was found empty). True when paths()
    // changed; the caller then rebuilds the backends that read them.
    bool refresh();

    // With a level: the requested directory does not exist yet (nothing is
    // watched). refresh() then costs a few stat() calls.
    bool awaiting_directory() const { return m_locator.has_value() && m_watched.empty(); }

    // After a sample: which directories hold none of the job's processes.
    void check();
    // Directories of paths() empty for k_empty_samples samples in a row while
    // another directory of the job held processes.
    const std::vector<std::filesystem::path> &empty_dirs() const { return m_empty; }
    // The text to log the first time a directory is found empty (once per
    // directory), else nullopt.
    std::optional<std::string> take_warning();
    // Every warning given so far: what the job's record keeps (each new one
    // replaces the previous record, so none is lost).
    const std::string &warnings() const { return m_said; }

private:
    struct Watched {
        std::filesystem::path dir;
        std::string controller;
        std::optional<backends::CgroupProcs> procs;
        int empty_run = 0;  // consecutive checks that found no process
        bool warned = false;
    };
    void watch_current();
    std::vector<pid_t> job_pids();
    // v2: remember a few of the processes the directory holds now.
    void remember_processes();
    // v2: "process P is now in /path" for a remembered process alive outside
    // every directory read; forgets the ones that exited.
    std::optional<std::string> moved_out();

    struct Known {
        pid_t pid = 0;
        uint64_t starttime = 0;  // tells a reused pid apart
    };

    std::filesystem::path m_root;
    std::filesystem::path m_proc;
    std::string m_requested;
    std::optional<cgroup::JobLocator> m_locator;
    cgroup::CgroupPaths m_paths;
    bool m_located = false;
    bool m_relocate = false;  // a directory was empty at the last check
    int m_rechecks = 0;       // searches left after the first location (a task may
                              // be placed in one hierarchy before another)
    std::vector<Watched> m_watched;
    std::vector<std::filesystem::path> m_empty;
    std::vector<pid_t> m_pids;        // scratch
    std::vector<Known> m_known;       // v2: processes last seen in the directory
    std::vector<Known> m_known_next;  // scratch
    std::optional<std::string> m_warning;
    std::string m_said;  // every warning given so far
};

}  // namespace colmet::node
