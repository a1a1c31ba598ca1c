// perf_mount and job_cpus() on fixture trees (the mount itself is exercised
// by PerfhwRealTest: mounting on a temporary tree would be a real mount).
#include "node/backends/perfhw/PerfhwBackend.hpp"
#include "node/backends/perfhw/perf_mount.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::node::backends::perfhw;
namespace fs = std::filesystem;

TEST(PerfMountTest, v2_root_is_its_own_perf_event_hierarchy)
{
    test::FakeTree tree;
    tree.write("cgroup.controllers", "cpu memory\n");
    auto root = ensure_perf_event_hierarchy(tree.root());
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(*root, tree.root());
}

TEST(PerfMountTest, v1_mounted_hierarchy_is_found)
{
    test::FakeTree tree;
    tree.write("cpuacct/cgroup.procs", "");
    tree.write("perf_event/cgroup.procs", "");
    auto root = ensure_perf_event_hierarchy(tree.root());
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(*root, tree.path("perf_event"));
}

TEST(PerfMountTest, v1_co_mounted_hierarchy_is_found)
{
    test::FakeTree tree;
    tree.write("net_cls,perf_event/cgroup.procs", "");
    tree.mkdir("perf_event_other");
    auto root = ensure_perf_event_hierarchy(tree.root());
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(*root, tree.path("net_cls,perf_event"));
}

TEST(PerfMountTest, job_directory_is_made_with_its_parents_and_removed)
{
    test::FakeTree tree;
    auto dir = ensure_job_perf_cgroup(tree.root(), "/oar/alice_42");
    ASSERT_TRUE(dir) << dir.error().message();
    EXPECT_EQ(*dir, tree.path("oar/alice_42"));
    EXPECT_TRUE(fs::is_directory(*dir));
    auto again = ensure_job_perf_cgroup(tree.root(), "oar/alice_42");
    ASSERT_TRUE(again) << again.error().message();

    auto removed = remove_job_perf_cgroup(tree.root(), "/oar/alice_42");
    ASSERT_TRUE(removed) << removed.error().message();
    EXPECT_FALSE(fs::exists(*dir));
    EXPECT_TRUE(fs::is_directory(tree.path("oar")));  // shared parents stay
    auto gone = remove_job_perf_cgroup(tree.root(), "/oar/alice_42");
    EXPECT_TRUE(gone) << "a missing directory is fine";
}

TEST(PerfMountTest, hostile_or_empty_job_paths_are_refused)
{
    test::FakeTree tree;
    for (const char *bad : {"", "/", "/oar/../../etc", "..", "/a/./../.."}) {
        auto dir = ensure_job_perf_cgroup(tree.root(), bad);
        ASSERT_FALSE(dir) << bad;
        EXPECT_EQ(dir.error().code(), Errc::invalid) << bad;
        EXPECT_FALSE(remove_job_perf_cgroup(tree.root(), bad)) << bad;
    }
}

TEST(JobCpusTest, uses_the_job_cpuset_within_the_online_cpus)
{
    test::FakeTree tree;
    tree.write("sys/devices/system/cpu/online", "0-3\n");
    tree.write("cg/cpuset/job/cpuset.effective_cpus", "1,3\n");
    tree.write("cg/cpuset/job/cpuset.cpus", "0-3\n");
    cgroup::CgroupPaths paths;
    paths.version = cgroup::Version::v1;
    paths.controllers.emplace_back("cpuset", tree.path("cg/cpuset/job"));
    auto cpus = job_cpus(paths, tree.path("sys"));
    ASSERT_TRUE(cpus) << cpus.error().message();
    EXPECT_EQ(*cpus, (std::vector<int>{1, 3}));

    tree.write("cg/cpuset/job/cpuset.effective_cpus", "2-5\n");  // 4, 5 are offline
    cpus = job_cpus(paths, tree.path("sys"));
    ASSERT_TRUE(cpus);
    EXPECT_EQ(*cpus, (std::vector<int>{2, 3}));
}

TEST(JobCpusTest, v2_effective_file_then_cpus_file_then_online)
{
    test::FakeTree tree;
    tree.write("sys/devices/system/cpu/online", "0-1\n");
    tree.write("job/cpuset.cpus.effective", "\n");  // empty: next file
    tree.write("job/cpuset.cpus", "1\n");
    cgroup::CgroupPaths paths;
    paths.version = cgroup::Version::v2;
    paths.unified = tree.path("job");
    auto cpus = job_cpus(paths, tree.path("sys"));
    ASSERT_TRUE(cpus) << cpus.error().message();
    EXPECT_EQ(*cpus, (std::vector<int>{1}));

    cgroup::CgroupPaths none;  // v1 without a cpuset directory
    none.version = cgroup::Version::v1;
    cpus = job_cpus(none, tree.path("sys"));
    ASSERT_TRUE(cpus);
    EXPECT_EQ(*cpus, (std::vector<int>{0, 1}));

    auto missing = job_cpus(none, tree.path("nowhere"));
    EXPECT_FALSE(missing);
}
