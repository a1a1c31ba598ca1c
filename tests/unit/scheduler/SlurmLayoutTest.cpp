// The Slurm facts colmet-job and the SPANK plugin share (SlurmLayout.hpp), on
// fake cgroup trees.
#include "scheduler/SlurmLayout.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

namespace colmet::sched::slurm {
namespace {

using colmet::test::FakeTree;

TEST(SlurmLayoutTest, SamplerIdsOfJobsAndSteps)
{
    auto job = parse_sampler_id("123");
    ASSERT_TRUE(job);
    EXPECT_EQ(job->job, 123U);
    EXPECT_FALSE(job->step);
    auto step = parse_sampler_id("123.4");
    ASSERT_TRUE(step);
    EXPECT_EQ(*step->step, 4U);
    EXPECT_EQ(sampler_id(*step), "123.4");
    EXPECT_EQ(sampler_id(*job), "123");
    for (const char *bad : {"", "12a", "+1", "-1", "1.", ".1", "1.2.3", "99999999999", "1 ", "123_4"})
        EXPECT_FALSE(parse_sampler_id(bad)) << bad;
}

TEST(SlurmLayoutTest, LevelsAndColmetsPerfEventDirectory)
{
    EXPECT_EQ(level({7, std::nullopt}), "job_7");
    EXPECT_EQ(level({7, 0}), "job_7/step_0");
    EXPECT_EQ(perf_cgroup(1003, {7, std::nullopt}), "/slurm/uid_1003/job_7");
    EXPECT_EQ(perf_cgroup(1003, {7, 2}), "/slurm/uid_1003/job_7/step_2");
}

TEST(SlurmLayoutTest, V2PicksTheScopeThatHoldsTheJob)
{
    FakeTree t;
    EXPECT_EQ(v2_cgroup(t.root(), {7, std::nullopt}), "/system.slice/slurmstepd.scope/job_7");
    t.mkdir("system.slice/n1_slurmstepd.scope");
    EXPECT_EQ(v2_cgroup(t.root(), {7, std::nullopt}), "/system.slice/n1_slurmstepd.scope/job_7");
    t.mkdir("system.slice/slurmstepd.scope/job_7");
    EXPECT_EQ(v2_cgroup(t.root(), {7, 1}), "/system.slice/n1_slurmstepd.scope/job_7/step_1");
    EXPECT_EQ(v2_cgroup(t.root(), {7, std::nullopt}), "/system.slice/slurmstepd.scope/job_7");
}

TEST(SlurmLayoutTest, SlurmManagesCgroupsWhenItsRootIsInAHierarchyOtherThanPerfEvent)
{
    FakeTree t;
    for (const char *h : {"cpuacct", "memory", "perf_event", "pids"})
        t.write(std::string(h) + "/cgroup.procs", "");
    EXPECT_FALSE(manages_cgroups(t.root(), {}));
    t.mkdir("perf_event/slurm/uid_5/job_1");  // colmet's own
    EXPECT_FALSE(manages_cgroups(t.root(), {}));
    t.mkdir("pids/slurm/uid_5/job_1");  // made by a colmet-job start for a job without Slurm cgroups
    EXPECT_FALSE(manages_cgroups(t.root(), {"/slurm"}));
    EXPECT_TRUE(manages_cgroups(t.root(), {}));  // nobody says colmet made it: Slurm's (non-multiple-slurmd build)
    t.mkdir("cpuacct/slurm_n1");                 // Debian's build: /slurm_<node>, made by slurmd at start
    EXPECT_EQ(manages_cgroups(t.root(), {"/slurm"}), t.path("cpuacct/slurm_n1"));
}

TEST(SlurmLayoutTest, AMountedHierarchyIsOneWithCgroupProcs)
{
    FakeTree t;
    t.mkdir("unified/slurm_n1");     // the cgroup2 tree of a hybrid host is not Slurm's v1
    t.mkdir("notmounted/slurm_n1");  // no cgroup.procs: not a hierarchy
    EXPECT_FALSE(manages_cgroups(t.root(), {}));
}

}  // namespace
}  // namespace colmet::sched::slurm
