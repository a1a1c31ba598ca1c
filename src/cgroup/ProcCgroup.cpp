#include "cgroup/ProcCgroup.hpp"

#include <algorithm>

namespace colmet::cgroup {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep)
{
    std::vector<std::string_view> out;
    size_t pos = 0;
    for (;;) {
        size_t end = s.find(sep, pos);
        out.push_back(s.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
        if (end == std::string_view::npos)
            return out;
        pos = end + 1;
    }
}

}  // namespace

bool Membership::has(std::string_view controller) const
{
    return std::find(controllers.begin(), controllers.end(), controller) != controllers.end();
}

std::vector<Membership> parse_proc_cgroup(std::string_view text)
{
    std::vector<Membership> out;
    for (auto line : split(text, '\n')) {
        // hierarchy-id:controller-list:path; the path may itself hold ':'.
        auto first = line.find(':');
        if (first == std::string_view::npos || first == 0)
            continue;
        auto second = line.find(':', first + 1);
        if (second == std::string_view::npos)
            continue;
        std::string_view id = line.substr(0, first);
        if (!std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        std::string_view path = line.substr(second + 1);
        if (path.empty() || path.front() != '/')
            continue;
        Membership m;
        m.path = std::string(path);
        for (auto c : split(line.substr(first + 1, second - first - 1), ','))
            if (!c.empty())
                m.controllers.emplace_back(c);
        if (m.unified() && id != "0")
            continue;  // only hierarchy 0 may have no controller
        out.push_back(std::move(m));
    }
    return out;
}

std::optional<Membership> membership_for(const std::vector<Membership> &lines, std::string_view controller)
{
    for (const auto &m : lines)
        if (controller.empty() ? m.unified() : m.has(controller))
            return m;
    return std::nullopt;
}

std::optional<std::vector<std::string>> parse_level(std::string_view text)
{
    while (!text.empty() && text.front() == '/')
        text.remove_prefix(1);
    while (!text.empty() && text.back() == '/')
        text.remove_suffix(1);
    if (text.empty())
        return std::nullopt;
    std::vector<std::string> out;
    for (auto part : split(text, '/')) {
        if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string_view::npos)
            return std::nullopt;
        out.emplace_back(part);
    }
    return out;
}

std::optional<std::string> level_directory(std::string_view path, std::span<const std::string> level)
{
    if (level.empty())
        return std::nullopt;
    std::vector<std::string_view> parts;
    for (auto p : split(path, '/'))
        if (!p.empty())
            parts.push_back(p);
    for (size_t start = 0; start + level.size() <= parts.size(); ++start) {
        if (!std::equal(level.begin(), level.end(), parts.begin() + static_cast<std::ptrdiff_t>(start)))
            continue;
        std::string dir;
        for (size_t i = 0; i < start + level.size(); ++i)
            dir += "/" + std::string(parts[i]);
        return dir;
    }
    return std::nullopt;
}

bool is_within(std::string_view path, std::string_view dir)
{
    while (dir.size() > 1 && dir.back() == '/')
        dir.remove_suffix(1);
    if (dir == "/")
        return !path.empty() && path.front() == '/';
    if (path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0)
        return false;
    return path.size() == dir.size() || path[dir.size()] == '/';
}

}  // namespace colmet::cgroup
