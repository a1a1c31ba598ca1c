#include "cgroup/JobLocator.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/ProcCgroup.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <optional>
#include <system_error>

namespace colmet::cgroup {

namespace fs = std::filesystem;

namespace {

bool is_dir(const fs::path &p)
{
    std::error_code ec;
    return fs::is_directory(p, ec);
}

}  // namespace

JobLocator::JobLocator(fs::path cgroup_root, fs::path proc_root, std::vector<std::string> level)
    : m_root(std::move(cgroup_root)), m_proc(std::move(proc_root)), m_level(std::move(level))
{
}

CgroupPaths JobLocator::locate_text(std::string_view proc_cgroup) const
{
    CgroupFs fs(m_root);
    CgroupPaths out;
    out.version = fs.detect();
    const auto lines = parse_proc_cgroup(proc_cgroup);
    if (out.version == Version::v2) {
        auto m = membership_for(lines, "");
        if (!m)
            return out;
        if (auto dir = level_directory(m->path, m_level); dir && is_dir(m_root / dir->substr(1))) {
            out.relative = *dir;
            out.unified = m_root / dir->substr(1);
        }
        return out;
    }
    for (const auto &controller : fs.mounted_v1_controllers()) {
        auto m = membership_for(lines, controller);
        if (!m)
            continue;
        auto dir = level_directory(m->path, m_level);
        if (!dir)
            continue;
        fs::path full = m_root / controller / dir->substr(1);
        if (!is_dir(full))
            continue;
        if (out.relative.empty())
            out.relative = *dir;
        out.controllers.emplace_back(controller, std::move(full));
    }
    return out;
}

Result<CgroupPaths> JobLocator::locate(std::span<const pid_t> pids) const
{
    // Per controller, the first pid that shows the level there decides.
    std::optional<CgroupPaths> merged;
    for (pid_t pid : pids) {
        auto text = read_file(m_proc / std::to_string(pid) / "cgroup");
        if (!text)
            continue;  // exited since it was listed
        CgroupPaths found = locate_text(*text);
        if (found.relative.empty())
            continue;
        if (!merged) {
            merged = std::move(found);
        } else if (merged->version == Version::v1) {
            for (auto &entry : found.controllers)
                if (merged->dir_for(entry.first).empty())
                    merged->controllers.push_back(std::move(entry));
        }
        if (merged->version == Version::v2)
            break;
    }
    if (!merged)
        return Error(Errc::not_found, "no process of the job (" + std::to_string(pids.size()) +
                                          " looked at) is in a cgroup directory named " + text::join(m_level, "/"));
    // Keep CgroupFs's controller order, so that dir_for and directories()
    // read the same way whatever order the pids came in.
    auto order = v1_controllers();
    std::stable_sort(merged->controllers.begin(), merged->controllers.end(), [&](const auto &a, const auto &b) {
        return std::find(order.begin(), order.end(), a.first) < std::find(order.begin(), order.end(), b.first);
    });
    return std::move(*merged);
}

}  // namespace colmet::cgroup
