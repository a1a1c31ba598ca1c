// JobCgroups on fake trees: the job's directories found from its processes
// after the sampler started, and the empty-cgroup check (which directory,
// after how many samples, said once).
#include "node/JobCgroups.hpp"
#include "node/backends/processes/CgroupProcs.hpp"

#include "FakeTree.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colmet::node {
namespace {

using colmet::test::FakeTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class JobCgroupsTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        for (const char *h : {"cpuacct", "memory", "perf_event"})
            m_tree.write(std::string("cg/") + h + "/cgroup.procs", "");
    }
    JobCgroups make(const std::string &requested, std::optional<std::vector<std::string>> level)
    {
        return JobCgroups(m_tree.path("cg"), m_tree.path("proc"), requested, std::move(level));
    }
    FakeTree m_tree;
};

}  // namespace

TEST_F(JobCgroupsTest, CgroupProcsStopsAtEnoughProcesses)
{
    m_tree.write("cg/cpuacct/job/cgroup.procs", "");
    m_tree.write("cg/cpuacct/job/step_0/cgroup.procs", "5\n");
    m_tree.write("cg/cpuacct/job/step_1/cgroup.procs", "6\n7\n");
    auto procs = backends::CgroupProcs::open(m_tree.path("cg/cpuacct/job"));
    ASSERT_TRUE(procs);
    std::vector<pid_t> pids;
    backends::StatusText status;
    ASSERT_TRUE(procs->list(pids, status));
    EXPECT_EQ(pids.size(), 3U);
    // "Any process?": the walk stops after the first sub-cgroup that lists
    // one (which one comes first is the directory's order).
    ASSERT_TRUE(procs->list(pids, status, 1));
    EXPECT_GE(pids.size(), 1U);
    EXPECT_LT(pids.size(), 3U);
}

TEST_F(JobCgroupsTest, WithoutALevelAMissingCgroupIsAnError)
{
    auto j = make("/slurm/uid_5/job_9", std::nullopt);
    auto started = j.start();
    ASSERT_FALSE(started);
    EXPECT_EQ(started.error().code(), Errc::not_found);
}

TEST_F(JobCgroupsTest, WithALevelTheSamplerWaitsThenFollowsTheFirstProcess)
{
    auto j = make("/slurm/uid_5/job_9", std::vector<std::string>{"job_9"});
    ASSERT_TRUE(j.start());
    EXPECT_FALSE(j.located());
    EXPECT_EQ(j.describe(), "(none yet)");
    EXPECT_FALSE(j.refresh());

    // colmet's perf_event directory appears, empty: still nothing to follow.
    m_tree.write("cg/perf_event/slurm/uid_5/job_9/cgroup.procs", "");
    EXPECT_TRUE(j.refresh());
    EXPECT_FALSE(j.located());

    // A task arrives there, not yet placed by the scheduler anywhere else:
    // colmet's own directory alone does not locate the job.
    m_tree.write("cg/perf_event/slurm/uid_5/job_9/cgroup.procs", "77\n");
    m_tree.write("proc/77/cgroup", "2:cpuacct:/\n4:memory:/\n10:perf_event:/slurm/uid_5/job_9\n");
    EXPECT_FALSE(j.refresh());
    EXPECT_FALSE(j.located());

    // The scheduler places it; the kernel shows it in Slurm's own directories.
    m_tree.write("cg/cpuacct/slurm_n1/uid_5/job_9/step_0/task_0/cgroup.procs", "77\n");
    m_tree.write("cg/memory/slurm_n1/uid_5/job_9/step_0/task_0/cgroup.procs", "77\n");
    m_tree.write("cg/perf_event/slurm/uid_5/job_9/cgroup.procs", "77\n");
    m_tree.write("proc/77/cgroup", "2:cpuacct:/slurm_n1/uid_5/job_9/step_0/task_0\n"
                                   "4:memory:/slurm_n1/uid_5/job_9/step_0/task_0\n"
                                   "10:perf_event:/slurm/uid_5/job_9\n");
    EXPECT_TRUE(j.refresh());
    EXPECT_TRUE(j.located());
    EXPECT_THAT(j.paths().controllers, ElementsAre(Pair("cpuacct", m_tree.path("cg/cpuacct/slurm_n1/uid_5/job_9")),
                                                   Pair("memory", m_tree.path("cg/memory/slurm_n1/uid_5/job_9")),
                                                   Pair("perf_event", m_tree.path("cg/perf_event/slurm/uid_5/job_9"))));
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(j.refresh());  // located; the re-checks find nothing new
    j.check();
    EXPECT_TRUE(j.empty_dirs().empty());
    EXPECT_FALSE(j.take_warning());
}

TEST_F(JobCgroupsTest, AHierarchyPlacedJustAfterTheFirstLocationIsAddedByARecheck)
{
    m_tree.write("cg/perf_event/slurm/uid_5/job_9/cgroup.procs", "77\n");
    m_tree.write("cg/cpuacct/slurm_n1/uid_5/job_9/task_0/cgroup.procs", "77\n");
    m_tree.write("proc/77/cgroup",
                 "2:cpuacct:/slurm_n1/uid_5/job_9/task_0\n4:memory:/\n10:perf_event:/slurm/uid_5/job_9\n");
    auto j = make("/slurm/uid_5/job_9", std::vector<std::string>{"job_9"});
    ASSERT_TRUE(j.start());
    ASSERT_TRUE(j.located());
    EXPECT_TRUE(j.paths().dir_for("memory").empty());
    // The scheduler places the task in memory a moment later.
    m_tree.write("cg/memory/slurm_n1/uid_5/job_9/task_0/cgroup.procs", "77\n");
    m_tree.write("proc/77/cgroup", "2:cpuacct:/slurm_n1/uid_5/job_9/task_0\n"
                                   "4:memory:/slurm_n1/uid_5/job_9/task_0\n10:perf_event:/slurm/uid_5/job_9\n");
    EXPECT_TRUE(j.refresh());
    EXPECT_EQ(j.paths().dir_for("memory"), m_tree.path("cg/memory/slurm_n1/uid_5/job_9"));
    // A re-check never takes a hierarchy away.
    m_tree.write("proc/77/cgroup", "2:cpuacct:/\n4:memory:/\n10:perf_event:/slurm/uid_5/job_9\n");
    EXPECT_FALSE(j.refresh());
    EXPECT_EQ(j.paths().dir_for("cpuacct"), m_tree.path("cg/cpuacct/slurm_n1/uid_5/job_9"));
}

TEST_F(JobCgroupsTest, ADirectoryWithNoneOfTheJobsProcessesIsReportedAfterTwoSamplesOnce)
{
    m_tree.write("cg/cpuacct/job/cgroup.procs", "");
    m_tree.write("cg/memory/job/cgroup.procs", "12\n");
    m_tree.write("cg/perf_event/job/cgroup.procs", "12\n");
    auto j = make("/job", std::nullopt);
    ASSERT_TRUE(j.start());
    j.check();
    EXPECT_TRUE(j.empty_dirs().empty());  // one sample is not enough
    EXPECT_FALSE(j.take_warning());
    j.check();
    EXPECT_THAT(j.empty_dirs(), ElementsAre(m_tree.path("cg/cpuacct/job")));
    auto warning = j.take_warning();
    ASSERT_TRUE(warning);
    EXPECT_THAT(*warning, HasSubstr("the cpuacct directory " + m_tree.path("cg/cpuacct/job").string() +
                                    " holds none of the job's processes (" + m_tree.path("cg/memory/job").string() +
                                    " holds 1)"));
    j.check();
    EXPECT_EQ(j.empty_dirs().size(), 1U);
    EXPECT_FALSE(j.take_warning());  // said once

    // The process shows up there: no longer empty.
    m_tree.write("cg/cpuacct/job/cgroup.procs", "12\n");
    j.check();
    EXPECT_TRUE(j.empty_dirs().empty());
}

TEST_F(JobCgroupsTest, AJobWithNoProcessAtAllIsIdleNotMisplaced)
{
    for (const char *h : {"cpuacct", "memory", "perf_event"})
        m_tree.write(std::string("cg/") + h + "/job/cgroup.procs", "");
    auto j = make("/job", std::nullopt);
    ASSERT_TRUE(j.start());
    for (int i = 0; i < 3; ++i)
        j.check();
    EXPECT_TRUE(j.empty_dirs().empty());
    EXPECT_FALSE(j.take_warning());
}

TEST_F(JobCgroupsTest, AnEmptyPerfEventDirectoryIsNotASuspect)
{
    // Processes the hooks did not move into colmet's perf_event directory
    // (Slurm's extern step) are no sign of a wrong path.
    m_tree.write("cg/cpuacct/job/cgroup.procs", "5\n");
    m_tree.write("cg/memory/job/cgroup.procs", "5\n");
    m_tree.write("cg/perf_event/job/cgroup.procs", "");
    auto j = make("/job", std::nullopt);
    ASSERT_TRUE(j.start());
    j.check();
    j.check();
    EXPECT_TRUE(j.empty_dirs().empty());
}

}  // namespace colmet::node
