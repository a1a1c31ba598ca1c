// The perf_event hierarchy and the job's perf_event cgroups on fixture trees
// (the mount itself is exercised by PerfhwRealTest: mounting on a temporary
// tree would be a real mount).
#include "cgroup/PerfEventHierarchy.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::cgroup;
namespace fs = std::filesystem;

TEST(PerfEventHierarchyTest, v2_root_is_its_own_perf_event_hierarchy)
{
    test::FakeTree tree;
    tree.write("cgroup.controllers", "cpu memory\n");
    auto root = ensure_perf_event_hierarchy(tree.root());
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(*root, tree.root());
}

TEST(PerfEventHierarchyTest, v1_mounted_hierarchy_is_found)
{
    test::FakeTree tree;
    tree.write("cpuacct/cgroup.procs", "");
    tree.write("perf_event/cgroup.procs", "");
    auto root = ensure_perf_event_hierarchy(tree.root());
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(*root, tree.path("perf_event"));
}

TEST(PerfEventHierarchyTest, v1_co_mounted_hierarchy_is_found)
{
    test::FakeTree tree;
    tree.write("net_cls,perf_event/cgroup.procs", "");
    tree.mkdir("perf_event_other");
    auto root = ensure_perf_event_hierarchy(tree.root());
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(*root, tree.path("net_cls,perf_event"));
}

TEST(PerfEventHierarchyTest, job_directory_is_made_with_its_parents_and_removed)
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

TEST(PerfEventHierarchyTest, hostile_or_empty_job_paths_are_refused)
{
    test::FakeTree tree;
    for (const char *bad : {"", "/", "/oar/../../etc", "..", "/a/./../.."}) {
        auto dir = ensure_job_perf_cgroup(tree.root(), bad);
        ASSERT_FALSE(dir) << bad;
        EXPECT_EQ(dir.error().code(), Errc::invalid) << bad;
        EXPECT_FALSE(remove_job_perf_cgroup(tree.root(), bad)) << bad;
    }
}
