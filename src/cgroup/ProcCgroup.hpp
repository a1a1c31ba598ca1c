// Reading where the kernel says a process is: /proc/<pid>/cgroup, one line
// per hierarchy ("4:cpu,cpuacct:/slurm_n1/uid_5/job_7/step_0/task_0", and
// "0::/path" for the unified tree). Pure text functions, no I/O: the Slurm
// plugin (which links nothing of colmet's) and the sampler share them.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::cgroup {

// One line of /proc/<pid>/cgroup.
struct Membership {
    std::vector<std::string> controllers;  // {"cpu", "cpuacct"}; empty for the unified tree; named
                                           // hierarchies ("name=systemd") are kept as written
    std::string path;                      // "/slurm_n1/uid_5/job_7/step_0/task_0"
    bool unified() const { return controllers.empty(); }
    bool has(std::string_view controller) const;
};

// Every well-formed line; malformed ones are skipped.
std::vector<Membership> parse_proc_cgroup(std::string_view text);

// The membership line of the hierarchy that carries `controller` (the
// unified line when controller is empty), or nullopt.
std::optional<Membership> membership_for(const std::vector<Membership> &lines, std::string_view controller);

// A job level: the path components that end the job's directory, e.g.
// {"job_7"} or {"job_7", "step_0"} (Slurm), {"alice_42"} (OAR). Parsed from
// "job_7/step_0"; empty, "." and ".." components are refused (nullopt).
std::optional<std::vector<std::string>> parse_level(std::string_view text);

// The directory in `path` that the level names: the prefix of `path` that ends
// with the level's components ("/slurm_n1/uid_5/job_7" for level {"job_7"}),
// or nullopt when `path` does not pass through such a directory. The first
// match from the root wins.
std::optional<std::string> level_directory(std::string_view path, std::span<const std::string> level);

// True when `path` is `dir` or below it ("/a/b" is below "/a", "/ab" is not).
bool is_within(std::string_view path, std::string_view dir);

}  // namespace colmet::cgroup
