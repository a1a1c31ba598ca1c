#include "TaskCgroup.hpp"

#include "cgroup/ProcCgroup.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

namespace colmet::spank {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 6> k_controllers{"perf_event", "cpu", "cpuacct", "memory", "blkio", "pids"};

std::vector<std::string_view> split(std::string_view s, char sep)
{
    std::vector<std::string_view> out;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t end = s.find(sep, pos);
        if (end == std::string_view::npos)
            end = s.size();
        out.push_back(s.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

std::vector<std::string_view> lines(std::string_view s)
{
    std::vector<std::string_view> out;
    for (auto l : split(s, '\n'))
        if (!l.empty())
            out.push_back(l);
    return out;
}

// mountinfo escapes blanks and backslashes as \040 and \134.
std::string unescape(std::string_view s)
{
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            std::string_view oct = s.substr(i + 1, 3);
            if (oct.size() == 3 && std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
                out += static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0'));
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

bool same_set(std::vector<std::string> a, std::vector<std::string> b)
{
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b;
}

// The process's path in the v1 hierarchy with exactly these controllers.
std::optional<std::string> current_cgroup(const std::vector<cgroup::Membership> &memberships,
                                          const std::vector<std::string> &controllers)
{
    for (const auto &m : memberships) {
        std::vector<std::string> named;
        for (const auto &c : m.controllers)
            if (c.find('=') == std::string::npos)
                named.push_back(c);
        if (!named.empty() && same_set(named, controllers))
            return m.path;
    }
    return std::nullopt;
}

}  // namespace

std::vector<CgroupMount> colmet_v1_mounts(std::string_view mountinfo, const fs::path &cgroup_root)
{
    std::vector<CgroupMount> out;
    std::string root = cgroup_root.lexically_normal().string();
    while (root.size() > 1 && root.back() == '/')
        root.pop_back();
    for (auto line : lines(mountinfo)) {
        // id parent major:minor root mount-point options [optional...] - fstype source super-options
        auto dash = line.find(" - ");
        if (dash == std::string_view::npos)
            continue;
        auto left = split(line.substr(0, dash), ' ');
        auto right = split(line.substr(dash + 3), ' ');
        if (left.size() < 5 || right.size() < 3 || right[0] != "cgroup")
            continue;
        std::string mount_point = unescape(left[4]);
        if (fs::path(mount_point).parent_path().lexically_normal().string() != root)
            continue;
        CgroupMount m;
        m.mount_point = mount_point;
        bool wanted = false;
        for (auto opt : split(right[2], ',')) {
            if (std::find(k_controllers.begin(), k_controllers.end(), opt) != k_controllers.end())
                wanted = true;
            if (opt == "rw" || opt == "ro" || opt.find('=') != std::string_view::npos || opt == "clone_children" ||
                opt == "noprefix" || opt == "xattr" || opt == "cpuset_v2_mode")
                continue;
            m.controllers.emplace_back(opt);
        }
        if (wanted)
            out.push_back(std::move(m));
    }
    return out;
}

std::vector<fs::path> attach_targets(const std::vector<CgroupMount> &mounts, std::string_view proc_cgroup,
                                     const std::string &job_rel, const std::optional<std::string> &step_rel)
{
    std::vector<fs::path> out;
    const auto memberships = cgroup::parse_proc_cgroup(proc_cgroup);
    for (const auto &m : mounts) {
        auto current = current_cgroup(memberships, m.controllers);
        if (current && cgroup::is_within(*current, job_rel))
            continue;
        std::error_code ec;
        fs::path step_dir = step_rel ? m.mount_point / step_rel->substr(1) : fs::path();
        fs::path job_dir = m.mount_point / job_rel.substr(1);
        if (!step_dir.empty() && fs::is_directory(step_dir, ec))
            out.push_back(step_dir / "cgroup.procs");
        else if (fs::is_directory(job_dir, ec))
            out.push_back(job_dir / "cgroup.procs");
    }
    return out;
}

Result<void> attach_pid(const std::vector<fs::path> &targets, pid_t pid)
{
    std::optional<Error> first;
    std::string text = std::to_string(pid);
    for (const auto &t : targets) {
        int fd = ::open(t.c_str(), O_WRONLY | O_CLOEXEC);
        int err = 0;
        if (fd < 0) {
            err = errno;
        } else {
            if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
                err = errno;
            ::close(fd);
        }
        if (err != 0 && !first)
            first = Error::system("write pid " + text + " to", t, err);
    }
    if (first)
        return *first;
    return ok();
}

}  // namespace colmet::spank
