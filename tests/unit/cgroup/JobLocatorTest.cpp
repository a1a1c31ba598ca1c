// ProcCgroup (parsing /proc/<pid>/cgroup, cutting a path at the job's level)
// and JobLocator on fake trees laid out as the schedulers really do it:
// Slurm 22.05's cgroup v1 plugins in Debian's build (/slurm_<node>), the
// plain /slurm prefix, Slurm's cgroup v2 layout, OAR's per-controller links
// and OAR's fallback with every controller co-mounted in one hierarchy.
#include "cgroup/JobLocator.hpp"
#include "cgroup/CgroupFs.hpp"
#include "cgroup/ProcCgroup.hpp"

#include "FakeTree.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colmet::cgroup {
namespace {

using colmet::test::FakeTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
namespace fs = std::filesystem;

// The real /proc/<pid>/cgroup of a task of `srun -n2` with proctrack/cgroup,
// task/cgroup and jobacct_gather/cgroup on Debian 12 (issue 12), where colmet
// made only the perf_event directory.
constexpr const char *k_slurm_task = "10:perf_event:/slurm/uid_1003/job_3054368/step_0\n"
                                     "9:name=systemd:/\n"
                                     "8:pids:/\n"
                                     "7:blkio:/\n"
                                     "6:freezer:/slurm_localhost/uid_1003/job_3054368/step_0\n"
                                     "5:devices:/\n"
                                     "4:memory:/slurm_localhost/uid_1003/job_3054368/step_0/task_0\n"
                                     "3:cpuset:/slurm_localhost/uid_1003/job_3054368/step_0\n"
                                     "2:cpuacct:/slurm_localhost/uid_1003/job_3054368/step_0/task_0\n"
                                     "1:cpu:/\n"
                                     "0::/\n";

TEST(ProcCgroupTest, ParsesEveryHierarchyAndTheUnifiedLine)
{
    auto lines = parse_proc_cgroup("4:cpu,cpuacct:/a/b\n0::/u/v\n9:name=systemd:/\nbad line\n:x:/y\n3::/no-ctl\n");
    ASSERT_EQ(lines.size(), 3U);
    EXPECT_THAT(lines[0].controllers, ElementsAre("cpu", "cpuacct"));
    EXPECT_EQ(lines[0].path, "/a/b");
    EXPECT_TRUE(lines[1].unified());
    EXPECT_EQ(lines[1].path, "/u/v");
    EXPECT_TRUE(lines[2].has("name=systemd"));
    EXPECT_EQ(membership_for(lines, "cpuacct")->path, "/a/b");
    EXPECT_EQ(membership_for(lines, "")->path, "/u/v");
    EXPECT_FALSE(membership_for(lines, "memory"));
}

TEST(ProcCgroupTest, PathsMayHoldColons)
{
    auto lines = parse_proc_cgroup("5:memory:/odd:name/job_1\n");
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_EQ(lines[0].path, "/odd:name/job_1");
}

TEST(ProcCgroupTest, LevelsAreComponentsNeverEscapes)
{
    EXPECT_THAT(*parse_level("job_7/step_0"), ElementsAre("job_7", "step_0"));
    EXPECT_THAT(*parse_level("/alice_42/"), ElementsAre("alice_42"));
    for (const char *bad : {"", "/", "..", "job_7/../x", "a//b", ".", "a/./b"})
        EXPECT_FALSE(parse_level(bad)) << bad;
}

TEST(ProcCgroupTest, LevelDirectoryCutsThePathAtTheJob)
{
    std::vector<std::string> job{"job_7"};
    std::vector<std::string> step{"job_7", "step_0"};
    EXPECT_EQ(level_directory("/slurm_n1/uid_5/job_7/step_0/task_1", job), "/slurm_n1/uid_5/job_7");
    EXPECT_EQ(level_directory("/slurm_n1/uid_5/job_7/step_0/task_1", step), "/slurm_n1/uid_5/job_7/step_0");
    EXPECT_EQ(level_directory("/slurm/uid_5/job_7", job), "/slurm/uid_5/job_7");
    EXPECT_FALSE(level_directory("/slurm/uid_5/job_77/step_0", job));  // whole components only
    EXPECT_FALSE(level_directory("/slurm/uid_5/job_7/step_1", step));
    EXPECT_FALSE(level_directory("/", job));
    EXPECT_EQ(level_directory("/system.slice/n1_slurmstepd.scope/job_7/step_0/user/task_0", job),
              "/system.slice/n1_slurmstepd.scope/job_7");
}

TEST(ProcCgroupTest, IsWithinComparesWholeComponents)
{
    EXPECT_TRUE(is_within("/a/b", "/a"));
    EXPECT_TRUE(is_within("/a", "/a"));
    EXPECT_TRUE(is_within("/a/b", "/a/"));
    EXPECT_FALSE(is_within("/ab", "/a"));
    EXPECT_TRUE(is_within("/x", "/"));
}

// A v1 root where `controllers` are mounted hierarchies.
void mount_v1(const FakeTree &t, std::initializer_list<const char *> controllers)
{
    for (const char *c : controllers)
        t.write(std::string("cg/") + c + "/cgroup.procs", "");
}

TEST(JobLocatorTest, SlurmCgroupPluginsGiveEachHierarchyItsOwnDirectory)
{
    FakeTree t;
    mount_v1(t, {"cpu", "cpuacct", "memory", "blkio", "pids", "cpuset", "perf_event"});
    for (const char *d :
         {"cpuacct/slurm_localhost/uid_1003/job_3054368/step_0/task_0",
          "memory/slurm_localhost/uid_1003/job_3054368/step_0/task_0",
          "cpuset/slurm_localhost/uid_1003/job_3054368/step_0", "perf_event/slurm/uid_1003/job_3054368/step_0"})
        t.mkdir(std::string("cg/") + d);
    JobLocator job(t.path("cg"), t.path("proc"), {"job_3054368"});
    auto paths = job.locate_text(k_slurm_task);
    EXPECT_EQ(paths.version, Version::v1);
    EXPECT_EQ(paths.relative, "/slurm_localhost/uid_1003/job_3054368");
    EXPECT_THAT(paths.controllers,
                ElementsAre(Pair("cpuacct", t.path("cg/cpuacct/slurm_localhost/uid_1003/job_3054368")),
                            Pair("memory", t.path("cg/memory/slurm_localhost/uid_1003/job_3054368")),
                            Pair("cpuset", t.path("cg/cpuset/slurm_localhost/uid_1003/job_3054368")),
                            Pair("perf_event", t.path("cg/perf_event/slurm/uid_1003/job_3054368"))));
    // cpu, blkio and pids hold no job directory: the scheduler made none there.
    EXPECT_TRUE(paths.dir_for("cpu").empty());

    JobLocator step(t.path("cg"), t.path("proc"), {"job_3054368", "step_0"});
    EXPECT_EQ(step.locate_text(k_slurm_task).dir_for("cpuacct"),
              t.path("cg/cpuacct/slurm_localhost/uid_1003/job_3054368/step_0"));
}

TEST(JobLocatorTest, LocateReadsProcessesAndMergesWhatEachShows)
{
    FakeTree t;
    mount_v1(t, {"cpuacct", "memory", "perf_event"});
    t.mkdir("cg/cpuacct/slurm/uid_5/job_9/step_batch/task_0");
    t.mkdir("cg/memory/slurm/uid_5/job_9/step_batch/task_0");
    t.mkdir("cg/perf_event/slurm/uid_5/job_9");
    // pid 10 has exited (no file), pid 11 is not the job's, pid 12 shows
    // only perf_event, pid 13 shows the rest.
    t.write("proc/11/cgroup", "2:cpuacct:/\n4:memory:/\n10:perf_event:/\n");
    t.write("proc/12/cgroup", "2:cpuacct:/\n4:memory:/\n10:perf_event:/slurm/uid_5/job_9\n");
    t.write("proc/13/cgroup", "2:cpuacct:/slurm/uid_5/job_9/step_batch/task_0\n"
                              "4:memory:/slurm/uid_5/job_9/step_batch/task_0\n10:perf_event:/slurm/uid_5/job_9\n");
    JobLocator loc(t.path("cg"), t.path("proc"), {"job_9"});
    std::vector<pid_t> pids{10, 11, 12, 13};
    auto paths = loc.locate(pids);
    ASSERT_TRUE(paths) << paths.error().message();
    EXPECT_THAT(paths->controllers, ElementsAre(Pair("cpuacct", t.path("cg/cpuacct/slurm/uid_5/job_9")),
                                                Pair("memory", t.path("cg/memory/slurm/uid_5/job_9")),
                                                Pair("perf_event", t.path("cg/perf_event/slurm/uid_5/job_9"))));

    std::vector<pid_t> strangers{10, 11};
    auto none = loc.locate(strangers);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code(), Errc::not_found);
    EXPECT_THAT(none.error().message(),
                HasSubstr("no process of the job (2 looked at) is in a cgroup directory named job_9"));
}

TEST(JobLocatorTest, AProcessPathWhoseDirectoryIsGoneIsNotUsed)
{
    FakeTree t;
    mount_v1(t, {"cpuacct"});
    JobLocator loc(t.path("cg"), t.path("proc"), {"job_9"});
    EXPECT_TRUE(loc.locate_text("2:cpuacct:/slurm/uid_5/job_9/step_0\n").controllers.empty());
}

TEST(JobLocatorTest, SlurmCgroupV2Layout)
{
    FakeTree t;
    t.write("cg/cgroup.controllers", "cpu memory io pids");
    t.mkdir("cg/system.slice/localhost_slurmstepd.scope/job_7/step_0/user/task_0");
    JobLocator loc(t.path("cg"), t.path("proc"), {"job_7"});
    auto paths = loc.locate_text("0::/system.slice/localhost_slurmstepd.scope/job_7/step_0/user/task_0\n");
    EXPECT_EQ(paths.version, Version::v2);
    EXPECT_EQ(paths.unified, t.path("cg/system.slice/localhost_slurmstepd.scope/job_7"));
    EXPECT_EQ(paths.relative, "/system.slice/localhost_slurmstepd.scope/job_7");
}

TEST(JobLocatorTest, OarFallbackWithEveryControllerCoMountedInOneHierarchy)
{
    // /dev/oar_cgroups holds cpuset,cpu,cpuacct,devices,freezer in one
    // hierarchy; /dev/oar_cgroups_links/<controller> all point to it.
    FakeTree t;
    t.write("oar_cgroups/cgroup.procs", "");
    t.mkdir("oar_cgroups/oar/alice_42");
    t.mkdir("links");
    for (const char *c : {"cpuset", "cpu", "cpuacct", "devices", "freezer"})
        fs::create_directory_symlink(t.path("oar_cgroups"), t.path(std::string("links/") + c));
    JobLocator loc(t.path("links"), t.path("proc"), {"alice_42"});
    auto paths = loc.locate_text("3:cpuset,cpu,cpuacct,devices,freezer:/oar/alice_42\n");
    EXPECT_EQ(paths.relative, "/oar/alice_42");
    EXPECT_EQ(paths.dir_for("cpuacct"), t.path("links/cpuacct/oar/alice_42"));
    EXPECT_EQ(paths.dir_for("cpu"), t.path("links/cpu/oar/alice_42"));
    EXPECT_EQ(paths.dir_for("cpuset"), t.path("links/cpuset/oar/alice_42"));
    EXPECT_TRUE(paths.dir_for("memory").empty());
}

TEST(JobLocatorTest, OarFallbackResolvesThroughTheLinks)
{
    // What the JRM hook's --cgroup /oar/<user>_<job> gives colmet-node with
    // --cgroup-root /dev/oar_cgroups_links in OAR's fallback layout: one
    // directory, reached through every controller's link (perf_event too when
    // the JRM enables it). Not reproducible on a host whose controllers are
    // already mounted apart (mount -o cpuset,cpu,... fails with EBUSY).
    FakeTree t;
    t.write("oar_cgroups/cgroup.procs", "");
    t.write("oar_cgroups/oar/alice_42/cgroup.procs", "4242\n");
    t.mkdir("links");
    for (const char *c : {"cpuset", "cpu", "cpuacct", "devices", "freezer", "perf_event"})
        fs::create_directory_symlink(t.path("oar_cgroups"), t.path(std::string("links/") + c));
    auto paths = CgroupFs(t.path("links")).resolve("/oar/alice_42");
    ASSERT_TRUE(paths) << paths.error().message();
    EXPECT_EQ(paths->dir_for("cpuacct"), t.path("links/cpuacct/oar/alice_42"));
    EXPECT_EQ(paths->dir_for("perf_event"), t.path("links/perf_event/oar/alice_42"));
    EXPECT_TRUE(paths->dir_for("memory").empty());
    auto pids = CgroupFs::procs(*paths);
    ASSERT_TRUE(pids);
    EXPECT_THAT(*pids, ElementsAre(4242));
}

TEST(JobLocatorTest, OarPerControllerLinks)
{
    FakeTree t;
    mount_v1(t, {"cpuset", "cpu", "cpuacct", "perf_event"});
    for (const char *c : {"cpuset", "cpu", "cpuacct", "perf_event"})
        t.mkdir(std::string("cg/") + c + "/oar/bob_7");
    JobLocator loc(t.path("cg"), t.path("proc"), {"bob_7"});
    auto paths =
        loc.locate_text("1:cpu:/oar/bob_7\n2:cpuacct:/oar/bob_7\n3:cpuset:/oar/bob_7\n10:perf_event:/oar/bob_7\n");
    EXPECT_EQ(paths.controllers.size(), 4U);
    EXPECT_EQ(paths.dir_for("cpuacct"), t.path("cg/cpuacct/oar/bob_7"));
}

}  // namespace
}  // namespace colmet::cgroup
