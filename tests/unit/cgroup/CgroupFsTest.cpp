// CgroupFs on checked-in fixture trees (tests/fixtures/cgroup/v1, v2) and on
// fake trees. The tests that need real cgroups are in CgroupFsRealTest.cpp.
#include "cgroup/CgroupFs.hpp"
#include "common/file_io.hpp"

#include "FakeTree.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace colmet::cgroup {
namespace {

using colmet::test::FakeTree;
using colmet::test::fixture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string slurp(const fs::path &p)
{
    auto r = read_file(p);
    return r ? *r : "<unreadable " + p.string() + ">";
}

std::vector<std::string> names(const CgroupPaths &paths)
{
    std::vector<std::string> out;
    for (const auto &entry : paths.controllers)
        out.push_back(entry.first);
    return out;
}

// --- detect ------------------------------------------------------------------

TEST(CgroupFsDetect, HybridV1FixtureIsV1)
{
    // The hybrid layout has unified/cgroup.controllers but none at the root.
    EXPECT_EQ(CgroupFs(fixture("cgroup/v1")).detect(), Version::v1);
}

TEST(CgroupFsDetect, V2FixtureIsV2) { EXPECT_EQ(CgroupFs(fixture("cgroup/v2")).detect(), Version::v2); }

TEST(CgroupFsDetect, MountedV1Controllers)
{
    FakeTree tree;
    tree.copy_fixture("cgroup/v1");
    tree.mkdir("perf_event");                     // a bare tmpfs directory: not mounted
    fs::remove(tree.path("blkio/cgroup.procs"));  // as if blkio were not mounted
    EXPECT_THAT(CgroupFs(tree.root()).mounted_v1_controllers(),
                ElementsAre("cpuacct", "cpu", "memory", "pids", "cpuset"));
    EXPECT_TRUE(CgroupFs(fixture("cgroup/v2")).mounted_v1_controllers().empty());
}

// --- resolve -----------------------------------------------------------------

TEST(CgroupFsResolve, V1AcceptsEveryForm)
{
    const auto root = fixture("cgroup/v1");
    CgroupFs cg(root);
    const std::vector<std::string> forms = {"/oar/alice_42", "oar/alice_42", "//oar/./alice_42/",
                                            (root / "memory/oar/alice_42").string(),
                                            (root / "cpuset/oar/alice_42").string()};
    for (const auto &form : forms) {
        SCOPED_TRACE(form);
        auto r = cg.resolve(form);
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->version, Version::v1);
        EXPECT_EQ(r->relative, "/oar/alice_42");
        EXPECT_THAT(names(*r), ElementsAre("cpuacct", "cpu", "memory", "blkio", "pids", "cpuset"));
        EXPECT_EQ(r->dir_for("memory"), root / "memory/oar/alice_42");
        EXPECT_TRUE(r->unified.empty());
    }
}

TEST(CgroupFsResolve, V1ListsOnlyControllersHoldingTheJob)
{
    FakeTree tree;
    tree.copy_fixture("cgroup/v1");
    fs::remove_all(tree.path("blkio/oar/alice_42"));
    fs::remove_all(tree.path("cpuset/oar"));
    auto r = CgroupFs(tree.root()).resolve("/oar/alice_42");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_THAT(names(*r), ElementsAre("cpuacct", "cpu", "memory", "pids"));
    EXPECT_TRUE(r->dir_for("blkio").empty());
}

TEST(CgroupFsResolve, V1CoMountedCpuCpuacctThroughSymlinks)
{
    FakeTree tree;
    tree.write("cpu,cpuacct/cgroup.procs", "1\n");
    tree.write("cpu,cpuacct/slurm/job_7/cpuacct.usage", "123\n");
    tree.write("memory/cgroup.procs", "1\n");
    tree.mkdir("memory/slurm/job_7");
    fs::create_directory_symlink("cpu,cpuacct", tree.path("cpu"));
    fs::create_directory_symlink("cpu,cpuacct", tree.path("cpuacct"));
    CgroupFs cg(tree.root());
    const std::vector<std::string> forms = {"/slurm/job_7", tree.path("cpu,cpuacct/slurm/job_7").string(),
                                            tree.path("cpuacct/slurm/job_7").string()};
    for (const auto &form : forms) {
        SCOPED_TRACE(form);
        auto r = cg.resolve(form);
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->relative, "/slurm/job_7");
        EXPECT_THAT(names(*r), ElementsAre("cpuacct", "cpu", "memory"));
        EXPECT_EQ(slurp(r->dir_for("cpuacct") / "cpuacct.usage"), "123\n");
    }
}

TEST(CgroupFsResolve, V2AcceptsEveryForm)
{
    const auto root = fixture("cgroup/v2");
    CgroupFs cg(root);
    const std::string job = "system.slice/slurmstepd.scope/job_5";
    const std::vector<std::string> forms = {"/" + job, job, (root / job).string(), (root / job).string() + "/"};
    for (const auto &form : forms) {
        SCOPED_TRACE(form);
        auto r = cg.resolve(form);
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->version, Version::v2);
        EXPECT_EQ(r->relative, "/" + job);
        EXPECT_EQ(r->unified, root / job);
        EXPECT_TRUE(r->controllers.empty());
    }
    auto oar = cg.resolve("/oar/alice_42");
    ASSERT_TRUE(oar) << oar.error().message();
    EXPECT_EQ(oar->unified, root / "oar/alice_42");
}

TEST(CgroupFsResolve, MissingJobIsNotFoundAndNamesThePaths)
{
    const auto v1root = fixture("cgroup/v1");
    auto v1 = CgroupFs(v1root).resolve("/oar/bob_7");
    ASSERT_FALSE(v1);
    EXPECT_EQ(v1.error().code(), Errc::not_found);
    EXPECT_THAT(v1.error().message(), HasSubstr((v1root / "memory/oar/bob_7").string()));
    EXPECT_THAT(v1.error().message(), HasSubstr((v1root / "cpuacct/oar/bob_7").string()));

    const auto v2root = fixture("cgroup/v2");
    auto v2 = CgroupFs(v2root).resolve("system.slice/slurmstepd.scope/job_6");
    ASSERT_FALSE(v2);
    EXPECT_EQ(v2.error().code(), Errc::not_found);
    EXPECT_THAT(v2.error().message(), HasSubstr((v2root / "system.slice/slurmstepd.scope/job_6").string()));
}

TEST(CgroupFsResolve, NoMountedV1ControllerIsNotFound)
{
    FakeTree tree;
    tree.mkdir("memory");  // no cgroup.procs: not a mounted hierarchy
    auto r = CgroupFs(tree.root()).resolve("/oar/alice_42");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::not_found);
    EXPECT_THAT(r.error().message(), HasSubstr("no cgroup v1 controller is mounted"));
}

TEST(CgroupFsResolve, RejectsPathsThatLeaveTheHierarchy)
{
    for (const char *sub : {"v1", "v2"}) {
        const auto root = fixture(std::string("cgroup/") + sub);
        CgroupFs cg(root);
        const std::vector<std::string> bad_paths = {"../../etc",
                                                    "/oar/../../etc",
                                                    "oar/alice_42/..",
                                                    (root / "memory/../../etc").string(),
                                                    "",
                                                    "/",
                                                    "//.",
                                                    root.string(),
                                                    std::string("oar/alice_42\0x", 14)};
        for (const auto &bad : bad_paths) {
            SCOPED_TRACE(std::string(sub) + " '" + bad + "'");
            auto r = cg.resolve(bad);
            ASSERT_FALSE(r);
            EXPECT_EQ(r.error().code(), Errc::invalid) << r.error().message();
        }
    }
    // A v1 hierarchy's own directory is not a job cgroup either.
    auto mount = CgroupFs(fixture("cgroup/v1")).resolve(fixture("cgroup/v1/memory").string());
    ASSERT_FALSE(mount);
    EXPECT_EQ(mount.error().code(), Errc::invalid);
}

TEST(CgroupFsResolve, RejectsSymlinkEscapingTheRoot)
{
    FakeTree tree;
    FakeTree outside;
    outside.mkdir("victim");
    tree.write("cgroup.controllers", "cpu memory\n");
    fs::create_directory_symlink(outside.path("victim"), tree.path("evil"));
    auto r = CgroupFs(tree.root()).resolve("/evil");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
}

TEST(CgroupFsResolve, AbsoluteV1PathOutsideAnyHierarchyIsInvalid)
{
    const auto root = fixture("cgroup/v1");
    auto r = CgroupFs(root).resolve((root / "oar/alice_42").string());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    EXPECT_THAT(r.error().message(), HasSubstr("not a mounted cgroup v1 hierarchy"));
}

// --- dir_for -----------------------------------------------------------------

TEST(CgroupPaths, DirFor)
{
    CgroupPaths v2;
    v2.version = Version::v2;
    v2.unified = "/sys/fs/cgroup/job";
    EXPECT_EQ(v2.dir_for("memory"), fs::path("/sys/fs/cgroup/job"));
    EXPECT_EQ(v2.dir_for("perf_event"), fs::path("/sys/fs/cgroup/job"));

    auto v1 = CgroupFs(fixture("cgroup/v1")).resolve("oar/alice_42");
    ASSERT_TRUE(v1) << v1.error().message();
    EXPECT_EQ(v1->dir_for("cpuacct"), fixture("cgroup/v1/cpuacct/oar/alice_42"));
    EXPECT_EQ(v1->dir_for("pids"), fixture("cgroup/v1/pids/oar/alice_42"));
    EXPECT_TRUE(v1->dir_for("perf_event").empty());
    EXPECT_TRUE(v1->dir_for("").empty());
}

// --- create ------------------------------------------------------------------

TEST(CgroupFsCreate, V2EnablesControllersOnEveryParentLevel)
{
    FakeTree tree;
    tree.write("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    tree.write("cgroup.subtree_control", "");
    // What the kernel would show in the intermediate level once created:
    // the parent passed cpu and memory only.
    tree.write("colmet/cgroup.controllers", "cpu memory\n");
    tree.write("colmet/cgroup.subtree_control", "");
    CgroupFs cg(tree.root());
    auto r = cg.create("/colmet/job_1");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->version, Version::v2);
    EXPECT_EQ(r->relative, "/colmet/job_1");
    EXPECT_EQ(r->unified, tree.path("colmet/job_1"));
    EXPECT_TRUE(fs::is_directory(tree.path("colmet/job_1")));
    EXPECT_EQ(slurp(tree.path("cgroup.subtree_control")), "+cpu +memory +io +pids");
    EXPECT_EQ(slurp(tree.path("colmet/cgroup.subtree_control")), "+cpu +memory");
    // The job itself holds processes: its subtree_control is never written.
    EXPECT_FALSE(fs::exists(tree.path("colmet/job_1/cgroup.subtree_control")));

    // Idempotent; controllers already enabled are not written again.
    tree.write("cgroup.subtree_control", "cpuset cpu io memory pids\n");
    auto again = cg.create("colmet/job_1");
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(again->unified, r->unified);
    EXPECT_EQ(slurp(tree.path("cgroup.subtree_control")), "cpuset cpu io memory pids\n");
}

TEST(CgroupFsCreate, V1CopiesCpusetFromEachParentLevel)
{
    FakeTree tree;
    tree.copy_fixture("cgroup/v1");
    // The kernel creates cpuset.cpus/mems empty in a new cpuset cgroup; a
    // plain directory does not, so lay them out as the kernel would.
    for (const char *level : {"cpuset/slurm", "cpuset/slurm/job_9"}) {
        tree.write(std::string(level) + "/cpuset.cpus", "");
        tree.write(std::string(level) + "/cpuset.mems", "\n");
    }
    auto r = CgroupFs(tree.root()).create("/slurm/job_9");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->version, Version::v1);
    EXPECT_EQ(r->relative, "/slurm/job_9");
    EXPECT_THAT(names(*r), ElementsAre("cpuacct", "cpu", "memory", "blkio", "pids", "cpuset"));
    for (const auto &[name, dir] : r->controllers) {
        EXPECT_EQ(dir, tree.path(name + "/slurm/job_9"));
        EXPECT_TRUE(fs::is_directory(dir)) << dir;
    }
    EXPECT_EQ(slurp(tree.path("cpuset/slurm/cpuset.cpus")), "0-1");
    EXPECT_EQ(slurp(tree.path("cpuset/slurm/cpuset.mems")), "0");
    EXPECT_EQ(slurp(tree.path("cpuset/slurm/job_9/cpuset.cpus")), "0-1");
    EXPECT_EQ(slurp(tree.path("cpuset/slurm/job_9/cpuset.mems")), "0");
}

TEST(CgroupFsCreate, V1ExistingJobIsLeftAsIs)
{
    FakeTree tree;
    tree.copy_fixture("cgroup/v1");
    tree.write("cpuset/oar/alice_42/cpuset.cpus", "1\n");
    auto r = CgroupFs(tree.root()).create("oar/alice_42");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->controllers.size(),
              CgroupFs(tree.root()).mounted_v1_controllers().size());  // the fixture has no perf_event
    EXPECT_EQ(slurp(tree.path("cpuset/oar/alice_42/cpuset.cpus")), "1\n");
}

TEST(CgroupFsCreate, RejectsBadPathsAndMissingHierarchies)
{
    CgroupFs v2(fixture("cgroup/v2"));
    for (const char *bad : {"", "/", "../x", "/oar/../../etc"}) {
        auto r = v2.create(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().code(), Errc::invalid) << bad;
    }
    FakeTree empty;
    auto r = CgroupFs(empty.root()).create("/oar/x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::unsupported);
}

// --- attach / procs ----------------------------------------------------------

TEST(CgroupFsAttach, WritesEveryHierarchyAndReportsTheFirstFailure)
{
    FakeTree tree;
    for (const auto &c : v1_controllers())
        tree.write(c + "/cgroup.procs", "1\n");
    for (const auto &c : v1_controllers())
        tree.write(c + "/oar/j/cgroup.procs", "");
    CgroupFs cg(tree.root());
    auto paths = cg.resolve("/oar/j");
    ASSERT_TRUE(paths) << paths.error().message();
    ASSERT_TRUE(CgroupFs::attach(*paths, 4321));
    for (const auto &c : v1_controllers())
        EXPECT_EQ(slurp(tree.path(c + "/oar/j/cgroup.procs")), "4321") << c;

    fs::remove_all(tree.path("memory/oar/j"));
    for (const auto &c : v1_controllers())
        tree.write(c + "/oar/j/cgroup.procs", "");
    fs::remove(tree.path("memory/oar/j/cgroup.procs"));
    auto r = CgroupFs::attach(*paths, 77);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::system);
    EXPECT_THAT(r.error().message(), HasSubstr("attaching pid 77"));
    EXPECT_THAT(r.error().message(), HasSubstr(tree.path("memory/oar/j/cgroup.procs").string()));
    EXPECT_EQ(slurp(tree.path("pids/oar/j/cgroup.procs")), "77");  // the others were still written
    EXPECT_EQ(slurp(tree.path("cpuset/oar/j/cgroup.procs")), "77");

    EXPECT_EQ(CgroupFs::attach(*paths, 0).error().code(), Errc::invalid);
    EXPECT_EQ(CgroupFs::attach(CgroupPaths{}, 5).error().code(), Errc::not_found);
}

TEST(CgroupFsProcs, ReadsFixtures)
{
    auto v1 = CgroupFs(fixture("cgroup/v1")).resolve("/oar/alice_42");
    ASSERT_TRUE(v1) << v1.error().message();
    auto p1 = CgroupFs::procs(*v1);
    ASSERT_TRUE(p1) << p1.error().message();
    EXPECT_THAT(*p1, ElementsAre(5922, 5927, 5928));

    auto v2 = CgroupFs(fixture("cgroup/v2")).resolve("/oar/alice_42");
    ASSERT_TRUE(v2) << v2.error().message();
    auto p2 = CgroupFs::procs(*v2);
    ASSERT_TRUE(p2) << p2.error().message();
    EXPECT_THAT(*p2, ElementsAre(4242, 4243));
}

TEST(CgroupFsProcs, PrefersPidsThenCpuacctAndSkipsUnreadable)
{
    FakeTree tree;
    for (const auto &c : v1_controllers()) {
        tree.write(c + "/cgroup.procs", "1\n");
        tree.write(c + "/job/cgroup.procs", c == "pids" ? "7\n" : (c == "cpuacct" ? "8\n" : "9\n"));
    }
    auto paths = CgroupFs(tree.root()).resolve("job");
    ASSERT_TRUE(paths) << paths.error().message();
    EXPECT_THAT(*CgroupFs::procs(*paths), ElementsAre(7));
    fs::remove(tree.path("pids/job/cgroup.procs"));
    EXPECT_THAT(*CgroupFs::procs(*paths), ElementsAre(8));
    for (const auto &c : v1_controllers())
        fs::remove(tree.path(c + "/job/cgroup.procs"));
    auto none = CgroupFs::procs(*paths);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code(), Errc::system);
}

TEST(CgroupFsProcs, BadContentIsAParseError)
{
    FakeTree tree;
    tree.write("job/cgroup.procs", "12\nabc\n");
    CgroupPaths paths;
    paths.version = Version::v2;
    paths.unified = tree.path("job");
    auto r = CgroupFs::procs(paths);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::parse);
    EXPECT_THAT(r.error().message(), HasSubstr("abc"));
    EXPECT_EQ(CgroupFs::procs(CgroupPaths{}).error().code(), Errc::not_found);
}

// --- remove on a plain file system ---------------------------------------------

TEST(CgroupFsRemove, RemovesChildrenFirstAndToleratesGoneDirectories)
{
    FakeTree tree;
    tree.mkdir("job/step_0/task_0");
    tree.mkdir("job/step_1");
    CgroupPaths paths;
    paths.version = Version::v2;
    paths.relative = "/job";
    paths.unified = tree.path("job");
    ASSERT_TRUE(CgroupFs::remove(paths, 100));
    EXPECT_FALSE(fs::exists(tree.path("job")));
    EXPECT_TRUE(CgroupFs::remove(paths, 100));  // already gone: fine
}

TEST(CgroupFsRemove, NeverSignalsPidsListedOutsideCgroupfs)
{
    // A fixture's cgroup.procs holds arbitrary numbers; remove() must not
    // kill whatever process has that pid on the test machine.
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        for (;;)
            pause();
    }
    FakeTree tree;
    tree.write("job/cgroup.procs", std::to_string(child) + "\n");
    CgroupPaths paths;
    paths.version = Version::v2;
    paths.relative = "/job";
    paths.unified = tree.path("job");
    auto r = CgroupFs::remove(paths, 50);
    // Still running (a killed child would be a zombie: waitpid reaps it).
    EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0) << "remove() signalled a pid read from a plain file";
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ASSERT_FALSE(r);  // a plain directory with files cannot be rmdir'ed
    EXPECT_EQ(r.error().code(), Errc::system);
    EXPECT_EQ(r.error().sys_errno(), ENOTEMPTY);
    EXPECT_THAT(r.error().message(), HasSubstr(tree.path("job").string()));
}

TEST(CgroupFsRemove, RefusesAMountPoint)
{
    // A hierarchy root is a mount point; emptying it would kill every process.
    // /dev/pts stands in for one: a mount point that is not cgroupfs and has
    // nothing rmdir could take even if the check failed.
    const fs::path mount = "/dev/pts";
    struct stat self {};
    struct stat parent {};
    if (::stat(mount.c_str(), &self) != 0 || ::stat("/dev", &parent) != 0 || self.st_dev == parent.st_dev)
        GTEST_SKIP() << "/dev/pts is not a mount point here";
    CgroupPaths paths;
    paths.version = Version::v2;
    paths.relative = "/";
    paths.unified = mount;
    auto r = CgroupFs::remove(paths, 10);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    EXPECT_THAT(r.error().message(), HasSubstr("hierarchy root"));
}

}  // namespace
}  // namespace colmet::cgroup
