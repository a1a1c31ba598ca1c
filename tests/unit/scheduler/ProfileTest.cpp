// The scheduler profiles (Profile.hpp): where each scheduler puts a job, on
// fake cgroup trees.
#include "scheduler/Profile.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

namespace colmet::sched {
namespace {

using colmet::test::FakeTree;

Result<Placement> place(std::string_view profile, const JobQuery &q)
{
    const Profile *p = find_profile(profile);
    if (!p)
        return Error::invalid("no profile");
    return p->place(q);
}

TEST(ProfileTest, TheTableNamesEachSchedulerOnce)
{
    EXPECT_EQ(profile_names(), (std::vector<std::string>{"oar", "slurm"}));
    EXPECT_EQ(find_profile("pbs"), nullptr);
    for (const auto &p : profiles())
        EXPECT_FALSE(p.layout.empty()) << p.name;
}

TEST(ProfileTest, OarIsItsCpusetPathAsItIs)
{
    auto p = place("oar", {"42", "alice", "/sys/fs/cgroup", false, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/oar/alice_42");
    EXPECT_EQ(p->level, "");  // no search
    EXPECT_TRUE(p->scheduler_cgroups);
}

TEST(ProfileTest, SlurmOnV2IsTheStepdScopeFoundByLevel)
{
    FakeTree t;
    auto p = place("slurm", {"123.4", "alice", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/system.slice/slurmstepd.scope/job_123/step_4");
    EXPECT_EQ(p->level, "job_123/step_4");
    EXPECT_TRUE(p->scheduler_cgroups);
}

TEST(ProfileTest, SlurmOnV1IsColmetsPerfEventDirectoryAndSaysWhoMakesTheRest)
{
    FakeTree t;
    for (const char *h : {"cpuacct", "perf_event"})
        t.write(std::string(h) + "/cgroup.procs", "");
    auto p = place("slurm", {"7", "root", t.root(), false, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/slurm/uid_0/job_7");
    EXPECT_EQ(p->level, "job_7");
    EXPECT_FALSE(p->scheduler_cgroups);  // no Slurm directory: colmet makes the job's cgroups
    EXPECT_NE(p->note.find("keeps no cgroups"), std::string::npos) << p->note;
    t.mkdir("cpuacct/slurm_n1");  // slurmd's, made at its start
    p = place("slurm", {"7", "root", t.root(), false, {}});
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->scheduler_cgroups);
    EXPECT_NE(p->note.find("slurm_n1"), std::string::npos) << p->note;
}

TEST(ProfileTest, SlurmRefusesWhatIsNotItsJobOrUser)
{
    FakeTree t;
    auto bad_id = place("slurm", {"42_3", "root", t.root(), true, {}});
    ASSERT_FALSE(bad_id);
    EXPECT_EQ(bad_id.error().code(), Errc::invalid);
    EXPECT_NE(bad_id.error().message().find("neither a Slurm job id"), std::string::npos);
    auto bad_user = place("slurm", {"42", "no-such-user-colmet", t.root(), false, {}});
    ASSERT_FALSE(bad_user);
    EXPECT_NE(bad_user.error().message().find("unknown on this node"), std::string::npos);
}

}  // namespace
}  // namespace colmet::sched
