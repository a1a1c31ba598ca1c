// CgroupFs on the machine's real /sys/fs/cgroup: create a job cgroup, attach a
// sleeping child, list it, remove the cgroup. Needs root; skipped otherwise.
// Every cgroup made here lives under /colmet-test/<pid>-<test> and an RAII
// guard removes it (and kills the child) even when an assertion fails.
#include "cgroup/CgroupFs.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"

#include "FakeTree.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

namespace colmet::cgroup {
namespace {

using ::testing::Contains;
namespace fs = std::filesystem;

constexpr const char *k_test_top = "colmet-test";

// The real cgroup roots to test: the v1 hierarchies of a v1 or hybrid layout,
// and the v2 tree (the root on a pure v2 host, or the "unified" mount of a
// hybrid host).
std::optional<fs::path> real_root(Version want)
{
    const fs::path sys = "/sys/fs/cgroup";
    CgroupFs top(sys);
    if (want == Version::v1)
        return top.detect() == Version::v1 && !top.mounted_v1_controllers().empty() ? std::optional(sys) : std::nullopt;
    if (top.detect() == Version::v2)
        return sys;
    if (fs::exists(sys / "unified/cgroup.controllers"))
        return sys / "unified";
    return std::nullopt;
}

// Every directory the job would have under `root`, whether or not create()
// got that far.
CgroupPaths expected_paths(const CgroupFs &cg, const std::string &relative)
{
    CgroupPaths paths;
    paths.version = cg.detect();
    paths.relative = relative;
    if (paths.version == Version::v2)
        paths.unified = cg.root() / relative.substr(1);
    for (const auto &c : cg.mounted_v1_controllers())
        paths.controllers.emplace_back(c, cg.root() / c / relative.substr(1));
    return paths;
}

std::vector<fs::path> hierarchy_tops(const CgroupFs &cg)
{
    if (cg.detect() == Version::v2)
        return {cg.root()};
    std::vector<fs::path> out;
    for (const auto &c : cg.mounted_v1_controllers())
        out.push_back(cg.root() / c);
    return out;
}

// Owns one test cgroup and the children put in it.
class CgroupGuard {
public:
    CgroupGuard(const CgroupFs &cg, const std::string &name)
        : m_cg(cg), m_relative(std::string("/") + k_test_top + "/" + std::to_string(::getpid()) + "-" + name)
    {
    }
    CgroupGuard(const CgroupGuard &) = delete;
    CgroupGuard &operator=(const CgroupGuard &) = delete;
    ~CgroupGuard()
    {
        for (pid_t pid : m_children) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        (void)CgroupFs::remove(expected_paths(m_cg, m_relative), 2000);
        // Shared with concurrent test processes: only goes when empty.
        for (const auto &top : hierarchy_tops(m_cg))
            ::rmdir((top / k_test_top).c_str());
    }

    const std::string &relative() const { return m_relative; }

    // A child that sleeps until killed.
    pid_t spawn()
    {
        pid_t pid = ::fork();
        if (pid == 0) {
            for (;;)
                ::pause();
        }
        if (pid > 0)
            m_children.push_back(pid);
        return pid;
    }

    // Reap a child the test expects to be dead already; returns its status.
    int reap(pid_t pid)
    {
        int status = 0;
        ::waitpid(pid, &status, 0);
        std::erase(m_children, pid);
        return status;
    }

private:
    const CgroupFs &m_cg;
    std::string m_relative;
    std::vector<pid_t> m_children;
};

std::vector<fs::path> all_dirs(const CgroupPaths &paths)
{
    if (paths.version == Version::v2)
        return {paths.unified};
    std::vector<fs::path> out;
    for (const auto &entry : paths.controllers)
        out.push_back(entry.second);
    return out;
}

void run_lifecycle(Version version)
{
    if (!colmet::test::is_root())
        GTEST_SKIP() << "needs root to create cgroups";
    auto root = real_root(version);
    if (!root)
        GTEST_SKIP() << "no cgroup " << (version == Version::v1 ? "v1" : "v2") << " hierarchy on this machine";
    CgroupFs cg(*root);
    CgroupGuard guard(cg, ::testing::UnitTest::GetInstance()->current_test_info()->name());

    auto paths = cg.create(guard.relative());
    ASSERT_TRUE(paths) << paths.error().message();
    EXPECT_EQ(paths->version, cg.detect());
    EXPECT_EQ(paths->relative, guard.relative());
    for (const auto &dir : all_dirs(*paths))
        EXPECT_TRUE(fs::is_directory(dir)) << dir;
    if (auto cpuset = paths->dir_for("cpuset"); version == Version::v1 && !cpuset.empty()) {
        auto cpus = read_file(cpuset / "cpuset.cpus");
        ASSERT_TRUE(cpus) << cpus.error().message();
        EXPECT_FALSE(text::trim(*cpus).empty());
    }
    auto again = cg.create(guard.relative());
    ASSERT_TRUE(again) << again.error().message();

    auto resolved = cg.resolve(guard.relative().substr(1));
    ASSERT_TRUE(resolved) << resolved.error().message();
    EXPECT_EQ(all_dirs(*resolved), all_dirs(*paths));
    auto by_dir = cg.resolve(all_dirs(*paths).back().string());
    ASSERT_TRUE(by_dir) << by_dir.error().message();
    EXPECT_EQ(by_dir->relative, guard.relative());

    pid_t child = guard.spawn();
    ASSERT_GT(child, 0);
    auto attached = CgroupFs::attach(*paths, child);
    ASSERT_TRUE(attached) << attached.error().message();
    auto pids = CgroupFs::procs(*paths);
    ASSERT_TRUE(pids) << pids.error().message();
    EXPECT_THAT(*pids, Contains(child));

    auto removed = CgroupFs::remove(*paths, 2000);
    ASSERT_TRUE(removed) << removed.error().message();
    int status = guard.reap(child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    for (const auto &dir : all_dirs(*paths))
        EXPECT_FALSE(fs::exists(dir)) << dir << " left behind";
    EXPECT_TRUE(CgroupFs::remove(*paths, 100)) << "removing twice must be fine";
}

TEST(CgroupFsReal, V1Lifecycle) { run_lifecycle(Version::v1); }
TEST(CgroupFsReal, V2Lifecycle) { run_lifecycle(Version::v2); }

void run_nested(Version version)
{
    if (!colmet::test::is_root())
        GTEST_SKIP() << "needs root to create cgroups";
    auto root = real_root(version);
    if (!root)
        GTEST_SKIP() << "no cgroup " << (version == Version::v1 ? "v1" : "v2") << " hierarchy on this machine";
    CgroupFs cg(*root);
    CgroupGuard guard(cg, ::testing::UnitTest::GetInstance()->current_test_info()->name());

    auto job = cg.create(guard.relative());
    ASSERT_TRUE(job) << job.error().message();
    auto step = cg.create(guard.relative() + "/step_0/task_0");
    ASSERT_TRUE(step) << step.error().message();
    pid_t child = guard.spawn();
    ASSERT_GT(child, 0);
    auto attached = CgroupFs::attach(*step, child);
    ASSERT_TRUE(attached) << attached.error().message();

    // Removing the job takes its child cgroups and their processes with it.
    auto removed = CgroupFs::remove(*job, 2000);
    ASSERT_TRUE(removed) << removed.error().message();
    int status = guard.reap(child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    for (const auto &dir : all_dirs(*job))
        EXPECT_FALSE(fs::exists(dir)) << dir << " left behind";
}

TEST(CgroupFsReal, V1RemovesChildCgroupsFirst) { run_nested(Version::v1); }
TEST(CgroupFsReal, V2RemovesChildCgroupsFirst) { run_nested(Version::v2); }

// The v2 cgroup this process is in ("0::/path" in /proc/self/cgroup).
std::optional<std::string> own_v2_cgroup()
{
    auto text = read_file("/proc/self/cgroup");
    if (!text)
        return std::nullopt;
    for (auto line : text::Lines(*text))
        if (line.starts_with("0::"))
            return std::string(line.substr(3));
    return std::nullopt;
}

// Puts this process back into its original v2 cgroup when it goes.
class MoveBack {
public:
    MoveBack(fs::path procs) : m_procs(std::move(procs)) {}
    MoveBack(const MoveBack &) = delete;
    MoveBack &operator=(const MoveBack &) = delete;
    ~MoveBack() { (void)write_file(m_procs, std::to_string(::getpid())); }

private:
    fs::path m_procs;
};

// remove() never kills its caller: with the test process inside, the cgroup
// stays busy, the other process is killed, and the error says why. Only on
// v2, where moving this process has no effect on memory accounting.
TEST(CgroupFsReal, V2RemoveSparesTheCallerAndTimesOut)
{
    if (!colmet::test::is_root())
        GTEST_SKIP() << "needs root to create cgroups";
    auto root = real_root(Version::v2);
    auto original = own_v2_cgroup();
    if (!root || !original)
        GTEST_SKIP() << "no cgroup v2 hierarchy on this machine";
    CgroupFs cg(*root);
    CgroupGuard guard(cg, ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto paths = cg.create(guard.relative());
    ASSERT_TRUE(paths) << paths.error().message();
    pid_t child = guard.spawn();
    ASSERT_GT(child, 0);
    {
        MoveBack move_back(cg.root() / original->substr(1) / "cgroup.procs");
        ASSERT_TRUE(CgroupFs::attach(*paths, child));
        ASSERT_TRUE(CgroupFs::attach(*paths, ::getpid()));
        auto removed = CgroupFs::remove(*paths, 100);
        ASSERT_FALSE(removed);
        EXPECT_EQ(removed.error().code(), Errc::system);
        EXPECT_EQ(removed.error().sys_errno(), EBUSY);
        EXPECT_THAT(removed.error().message(), ::testing::HasSubstr("1 process(es) still in cgroup"));
        int status = guard.reap(child);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    }
    auto own = own_v2_cgroup();
    ASSERT_TRUE(own);
    EXPECT_EQ(*own, *original);
    auto removed = CgroupFs::remove(*paths, 1000);
    EXPECT_TRUE(removed) << removed.error().message();
    EXPECT_FALSE(fs::exists(paths->unified));
}

}  // namespace
}  // namespace colmet::cgroup
