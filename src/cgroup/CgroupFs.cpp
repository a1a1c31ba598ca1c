#include "cgroup/CgroupFs.hpp"

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <optional>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

namespace colmet::cgroup {

namespace fs = std::filesystem;

namespace {

// Controllers colmet enables on every level above a v2 job cgroup.
const std::vector<std::string> k_v2_controllers = {"cpu", "memory", "io", "pids"};

// The order in which procs() tries the v1 hierarchies.
const std::vector<std::string> k_procs_preference = {"pids", "cpuacct", "memory", "cpu", "blkio", "cpuset"};

constexpr auto k_poll_step = std::chrono::milliseconds(10);

// Split a cgroup path into its components, dropping empty and "." ones.
// ".." and NUL bytes are refused: a job path must never leave its hierarchy.
Result<std::vector<std::string>> split_components(std::string_view path)
{
    if (path.find('\0') != std::string_view::npos)
        return Error::invalid("cgroup path contains a NUL byte");
    std::vector<std::string> out;
    while (!path.empty()) {
        auto slash = path.find('/');
        auto part = path.substr(0, slash);
        path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
        if (part.empty() || part == ".")
            continue;
        if (part == "..")
            return Error::invalid("cgroup path must not contain '..'");
        out.emplace_back(part);
    }
    return out;
}

// A path for an error message: control characters (a hostile job id could
// hold newlines or NUL bytes) shown as '?'.
std::string printable(std::string_view s)
{
    std::string out(s.substr(0, 256));
    for (char &c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?';
    return out;
}

std::string join_relative(const std::vector<std::string> &parts)
{
    std::string out;
    for (const auto &p : parts)
        out += '/' + p;
    return out;
}

fs::path append(fs::path base, const std::vector<std::string> &parts)
{
    for (const auto &p : parts)
        base /= p;
    return base;
}

bool dir_exists(const fs::path &p)
{
    std::error_code ec;
    return fs::is_directory(p, ec);
}

// True when `dir`, with symlinks resolved, is strictly below `root`.
bool strictly_inside(const fs::path &dir, const fs::path &root)
{
    std::error_code ec;
    auto canon_dir = fs::canonical(dir, ec);
    if (ec)
        return false;
    auto canon_root = fs::canonical(root, ec);
    if (ec)
        return false;
    auto rel = canon_dir.lexically_relative(canon_root);
    return !rel.empty() && rel != "." && *rel.begin() != "..";
}

// Only a real cgroup file system lists live processes. On any other file
// system (a test fixture) the pids in cgroup.procs are just text and must
// never be signalled.
bool on_cgroupfs(const fs::path &dir)
{
    struct statfs st {};
    if (::statfs(dir.c_str(), &st) != 0)
        return false;
    return st.f_type == CGROUP_SUPER_MAGIC || st.f_type == CGROUP2_SUPER_MAGIC;
}

// A hierarchy's root cgroup is a mount point: its device differs from its
// parent directory's. remove() must never empty a root (it would kill every
// process on the machine).
bool is_mount_point(const fs::path &dir)
{
    struct stat self {};
    struct stat parent {};
    if (::stat(dir.c_str(), &self) != 0 || ::stat((dir / "..").c_str(), &parent) != 0)
        return false;
    return self.st_dev != parent.st_dev;
}

Result<std::vector<pid_t>> parse_pids(std::string_view text, const fs::path &file)
{
    std::vector<pid_t> pids;
    for (auto line : text::Lines(text)) {
        line = text::trim(line);
        if (line.empty())
            continue;
        auto v = text::parse_u64(line);
        if (!v || *v == 0 || *v > static_cast<uint64_t>(INT_MAX))
            return Error::parse(file.string() + ": bad pid '" + std::string(line) + "'");
        pids.push_back(static_cast<pid_t>(*v));
    }
    return pids;
}

// v1 cpuset: a new cgroup starts with empty cpuset.cpus and cpuset.mems, and
// attaching a task to it then fails with ENOSPC. Copy both from the parent
// when they are empty (a directory we just made, or one left half-made).
Result<void> inherit_cpuset(const fs::path &dir)
{
    for (const char *name : {"cpuset.cpus", "cpuset.mems"}) {
        auto current = read_file(dir / name);
        if (!current)
            return current.error();
        if (!text::trim(*current).empty())
            continue;
        auto parent = read_file(dir.parent_path() / name);
        if (!parent)
            return parent.error();
        auto value = text::trim(*parent);
        if (value.empty())
            return Error::invalid(std::string(name) + " of " + dir.parent_path().string() + " is empty");
        if (auto w = write_file(dir / name, value); !w)
            return w.error();
    }
    return ok();
}

// v2: enable cpu, memory, io and pids for the children of `dir`. Only the
// controllers listed in its cgroup.controllers can be enabled; those already
// in cgroup.subtree_control are left alone. The kernel takes the whole list
// in one write or refuses it all, so on failure retry one by one and keep
// what works. Note the v2 "no internal processes" rule: a non-root cgroup
// with processes in it cannot enable controllers for its children (EBUSY),
// which is why only levels above the job are touched, never the job itself.
void enable_v2_controllers(const fs::path &dir)
{
    auto available = read_file(dir / "cgroup.controllers");
    if (!available)
        return;  // not a cgroup directory we can configure
    auto enabled = read_file(dir / "cgroup.subtree_control");
    if (!enabled)
        return;
    auto listed = [](std::string_view list, std::string_view name) {
        for (size_t pos = 0; pos < list.size();) {
            auto end = list.find_first_of(" \n", pos);
            if (end == std::string_view::npos)
                end = list.size();
            if (list.substr(pos, end - pos) == name)
                return true;
            pos = end + 1;
        }
        return false;
    };
    std::vector<std::string> wanted;
    for (const auto &c : k_v2_controllers)
        if (listed(*available, c) && !listed(*enabled, c))
            wanted.push_back("+" + c);
    if (wanted.empty())
        return;
    std::string all;
    for (const auto &w : wanted)
        all += (all.empty() ? "" : " ") + w;
    const auto control = dir / "cgroup.subtree_control";
    if (write_file(control, all))
        return;
    for (const auto &w : wanted)
        if (auto r = write_file(control, w); !r)
            spdlog::warn("cgroup: cannot enable {} below {}: {}", w.substr(1), dir.string(), r.error().message());
}

// Every cgroup directory of the subtree at `top`, children before parents.
void collect_post_order(const fs::path &top, std::vector<fs::path> &out)
{
    std::error_code ec;
    for (fs::directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (it->is_directory(type_ec) && !it->is_symlink(type_ec))
            collect_post_order(it->path(), out);
    }
    out.push_back(top);
}

// Every pid listed in the cgroup.procs of `dirs` (directories already gone
// list nothing).
std::vector<pid_t> listed_pids(const std::vector<fs::path> &dirs)
{
    std::vector<pid_t> out;
    for (const auto &dir : dirs) {
        auto text = read_file(dir / "cgroup.procs");
        if (!text)
            continue;
        if (auto pids = parse_pids(*text, dir / "cgroup.procs"))
            out.insert(out.end(), pids->begin(), pids->end());
    }
    return out;
}

}  // namespace

Result<std::vector<pid_t>> read_pids(const fs::path &procs_file)
{
    auto text = read_file(procs_file);
    if (!text)
        return text.error();
    return parse_pids(*text, procs_file);
}

CgroupFs::CgroupFs(fs::path root) : m_root(std::move(root)) {}

Version CgroupFs::detect() const { return path_exists(m_root / "cgroup.controllers") ? Version::v2 : Version::v1; }

std::vector<fs::path> CgroupFs::root_procs_files() const
{
    std::vector<fs::path> out;
    std::error_code ec;
    if (fs::exists(m_root / "cgroup.controllers", ec)) {
        out.push_back(m_root / "cgroup.procs");
        return out;
    }
    for (fs::directory_iterator it(m_root, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_symlink(ec))
            continue;  // cpu -> cpu,cpuacct: the same hierarchy
        auto procs = it->path() / "cgroup.procs";
        if (fs::exists(procs, ec))
            out.push_back(procs);
    }
    return out;
}

std::vector<std::string> CgroupFs::mounted_v1_controllers() const
{
    std::vector<std::string> out;
    for (const auto &c : v1_controllers())
        if (path_exists(m_root / c / "cgroup.procs"))
            out.push_back(c);
    return out;
}

Result<CgroupPaths> CgroupFs::resolve(const std::string &job_cgroup) const
{
    if (job_cgroup.empty())
        return Error::invalid("empty cgroup path");
    auto parts = split_components(job_cgroup);
    if (!parts)
        return parts.error().with_context("cgroup '" + printable(job_cgroup) + "'");
    const Version version = detect();

    // An absolute directory under the root loses the root (and, for v1, the
    // hierarchy's mount point); anything else is relative to each hierarchy.
    std::vector<std::string> rel = std::move(*parts);
    std::error_code ec;
    auto root_parts = split_components(fs::absolute(m_root, ec).lexically_normal().string());
    if (job_cgroup.front() == '/' && !ec && root_parts && rel.size() >= root_parts->size() &&
        std::equal(root_parts->begin(), root_parts->end(), rel.begin())) {
        rel.erase(rel.begin(), rel.begin() + static_cast<std::ptrdiff_t>(root_parts->size()));
        if (version == Version::v1 && !rel.empty()) {
            if (!path_exists(m_root / rel.front() / "cgroup.procs"))
                return Error::invalid("cgroup '" + printable(job_cgroup) + "': " + (m_root / rel.front()).string() +
                                      " is not a mounted cgroup v1 hierarchy");
            rel.erase(rel.begin());
        }
    }
    if (rel.empty())
        return Error::invalid("cgroup '" + printable(job_cgroup) + "' names a hierarchy root, not a job cgroup");

    CgroupPaths paths;
    paths.version = version;
    paths.relative = join_relative(rel);

    if (version == Version::v2) {
        auto dir = append(m_root, rel);
        if (!dir_exists(dir))
            return Error(Errc::not_found,
                         "cgroup " + paths.relative + " not found: " + dir.string() + " does not exist");
        if (!strictly_inside(dir, m_root))
            return Error::invalid("cgroup " + dir.string() + " resolves outside " + m_root.string());
        paths.unified = std::move(dir);
        return paths;
    }

    const auto mounted = mounted_v1_controllers();
    if (mounted.empty())
        return Error(Errc::not_found, "cgroup " + paths.relative +
                                          " not found: no cgroup v1 controller is mounted under " + m_root.string());
    std::string tried;
    for (const auto &controller : mounted) {
        auto dir = append(m_root / controller, rel);
        if (!dir_exists(dir)) {
            tried += (tried.empty() ? "" : ", ") + dir.string();
            continue;
        }
        // Inside its own hierarchy, which may be a link to a mount elsewhere
        // (OAR's /dev/oar_cgroups_links/<controller>).
        if (!strictly_inside(dir, m_root / controller))
            return Error::invalid("cgroup " + dir.string() + " resolves outside " + (m_root / controller).string());
        paths.controllers.emplace_back(controller, std::move(dir));
    }
    if (paths.controllers.empty())
        return Error(Errc::not_found,
                     "cgroup " + paths.relative + " not found in any v1 hierarchy (tried " + tried + ")");
    return paths;
}

Result<CgroupPaths> CgroupFs::create(const std::string &relative) const
{
    auto parts = split_components(relative);
    if (!parts)
        return parts.error().with_context("creating cgroup '" + printable(relative) + "'");
    if (parts->empty())
        return Error::invalid("creating cgroup '" + printable(relative) + "': the hierarchy root is not a job cgroup");

    CgroupPaths paths;
    paths.version = detect();
    paths.relative = join_relative(*parts);

    if (paths.version == Version::v2) {
        fs::path dir = m_root;
        for (const auto &part : *parts) {
            enable_v2_controllers(dir);  // a parent level: give its children the controllers
            dir /= part;
            if (auto r = make_dir(dir); !r)
                return r.error().with_context("creating cgroup " + paths.relative);
        }
        paths.unified = std::move(dir);
        return paths;
    }

    const auto mounted = mounted_v1_controllers();
    if (mounted.empty())
        return Error(Errc::unsupported, "creating cgroup " + paths.relative +
                                            ": no cgroup v1 controller is mounted under " + m_root.string());
    for (const auto &controller : mounted) {
        fs::path dir = m_root / controller;
        for (const auto &part : *parts) {
            dir /= part;
            if (auto r = make_dir(dir); !r)
                return r.error().with_context("creating cgroup " + paths.relative + " (" + controller + ")");
            if (controller == "cpuset")
                if (auto r = inherit_cpuset(dir); !r)
                    return r.error().with_context("creating cgroup " + paths.relative + " (cpuset)");
        }
        paths.controllers.emplace_back(controller, std::move(dir));
    }
    return paths;
}

Result<void> CgroupFs::attach(const CgroupPaths &paths, pid_t pid)
{
    if (pid <= 0)
        return Error::invalid("attach: bad pid " + std::to_string(pid));
    const auto dirs = paths.directories();
    if (dirs.empty())
        return Error(Errc::not_found, "attach: cgroup " + paths.relative + " has no hierarchy directory");
    Result<void> result;  // the first failure; the other hierarchies are still tried
    const auto text = std::to_string(pid);
    for (const auto &dir : dirs) {
        auto r = write_file(dir / "cgroup.procs", text);
        if (!r && result.ok())
            result = r.error().with_context("attaching pid " + text + " to cgroup " + paths.relative);
    }
    return result;
}

Result<std::vector<pid_t>> CgroupFs::procs(const CgroupPaths &paths)
{
    std::vector<fs::path> candidates;
    if (paths.version == Version::v2) {
        candidates = paths.directories();
    } else {
        for (const auto &controller : k_procs_preference)
            if (auto dir = paths.dir_for(controller); !dir.empty())
                candidates.push_back(std::move(dir));
        for (const auto &entry : paths.controllers)
            if (std::ranges::find(k_procs_preference, entry.first) == k_procs_preference.end())
                candidates.push_back(entry.second);
    }
    if (candidates.empty())
        return Error(Errc::not_found, "cgroup " + paths.relative + " has no hierarchy directory");

    std::optional<Error> first;
    for (const auto &dir : candidates) {
        const auto file = dir / "cgroup.procs";
        auto text = read_file(file);
        if (text)
            return parse_pids(*text, file);
        if (!first)
            first = text.error();
    }
    return *first;
}

Result<void> CgroupFs::remove(const CgroupPaths &paths, int timeout_ms)
{
    // Every directory of the job in every hierarchy, children first. Those on
    // a real cgroup file system get their processes killed.
    std::vector<fs::path> all;
    std::vector<fs::path> live;
    std::vector<fs::path> kill_files;
    for (const auto &top : paths.directories())
        if (dir_exists(top) && is_mount_point(top))
            return Error::invalid("refusing to remove " + top.string() + ": it is a cgroup hierarchy root");
    for (const auto &top : paths.directories()) {
        if (!dir_exists(top))
            continue;  // already gone
        std::vector<fs::path> subtree;
        collect_post_order(top, subtree);
        if (on_cgroupfs(top)) {
            live.insert(live.end(), subtree.begin(), subtree.end());
            if (paths.version == Version::v2 && path_exists(top / "cgroup.kill"))
                kill_files.push_back(top / "cgroup.kill");
        }
        all.insert(all.end(), subtree.begin(), subtree.end());
    }

    // The caller is never killed, even when it sits in the cgroup (the
    // cgroup then stays busy and the error says so).
    const pid_t self = ::getpid();
    auto pids = listed_pids(live);
    // v2 (Linux >= 5.14): cgroup.kill kills the whole subtree at once,
    // including processes forked while we look.
    if (std::ranges::find(pids, self) == pids.end())
        for (const auto &file : kill_files)
            (void)write_file(file, "1");

    // SIGKILL, then poll until the kernel has emptied cgroup.procs everywhere.
    // Killed processes leave cgroup.procs when they exit, before they are
    // reaped, so waiting never depends on the parent calling wait().
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    while (!pids.empty()) {
        for (pid_t pid : pids)
            if (pid != self)
                ::kill(pid, SIGKILL);
        std::this_thread::sleep_for(k_poll_step);
        pids = listed_pids(live);
        if (std::chrono::steady_clock::now() >= deadline)
            break;
    }
    const size_t remaining = pids.size();

    // cgroupfs directories cannot be emptied with unlink; rmdir removes a
    // cgroup together with its control files once it has no process and no
    // child cgroup left.
    Result<void> result;  // the first failure; the other directories are still tried
    for (const auto &dir : all) {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT || !result.ok())
            continue;
        result = Error::system("rmdir", dir.string(), errno);
        if (remaining > 0)
            result = result.error().with_context(std::to_string(remaining) + " process(es) still in cgroup " +
                                                 paths.relative + " after " + std::to_string(timeout_ms) + " ms");
    }
    return result;
}

}  // namespace colmet::cgroup
