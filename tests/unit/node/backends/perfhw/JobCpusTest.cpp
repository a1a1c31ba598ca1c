// job_cpus() on fixture trees: the CPUs the perfhw backend counts on.
#include "node/backends/perfhw/PerfhwBackend.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::node::backends::perfhw;

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
