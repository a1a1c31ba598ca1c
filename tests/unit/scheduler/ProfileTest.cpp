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

// OAR on cgroup v2 (OAR 2.6, OAR 3): the layouts of its job resource
// managers, the one that exists; OAR 2.6's systemd slices when none does.
TEST(ProfileTest, OarOnV2FindsTheSliceItsJobResourceManagerMade)
{
    FakeTree t;
    auto p = place("oar", {"42", "root", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/oar.slice/oar-u0.slice/oar-u0-j42.slice");
    EXPECT_EQ(p->level, "");
    EXPECT_TRUE(p->scheduler_cgroups);
    EXPECT_TRUE(p->leaves.empty());

    t.mkdir("root_42.slice/root_42.service");
    p = place("oar", {"42", "root", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/root_42.slice");

    t.mkdir("oar.slice/root_42.scope");
    p = place("oar", {"42", "root", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/root_42.slice");  // the earlier layout wins

    t.mkdir("oar.slice/oar-u0.slice/oar-u0-j42.slice/oar-u0-j42-p1.scope");
    p = place("oar", {"42", "root", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/oar.slice/oar-u0.slice/oar-u0-j42.slice");

    FakeTree only_scope;
    only_scope.mkdir("oar.slice/root_7.scope");
    p = place("oar", {"7", "root", only_scope.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/oar.slice/root_7.scope");
}

// A user without a uid here cannot have the uid-named slices: the other
// layouts, OAR 2.5's path when none exists.
TEST(ProfileTest, OarOnV2WithAnUnknownUserLooksForTheOtherLayouts)
{
    FakeTree t;
    auto p = place("oar", {"42", "no-such-user-colmet", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/oar/no-such-user-colmet_42");
    t.mkdir("no-such-user-colmet_42.slice");
    p = place("oar", {"42", "no-such-user-colmet", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/no-such-user-colmet_42.slice");
}

TEST(ProfileTest, SlurmOnV2IsTheStepdScopeFoundByLevel)
{
    FakeTree t;
    auto p = place("slurm", {"123.4", "alice", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->relative, "/system.slice/slurmstepd.scope/job_123/step_4");
    EXPECT_EQ(p->level, "job_123/step_4");
    EXPECT_TRUE(p->scheduler_cgroups);
    // The step's tasks, not its slurmstepd; the job's: every step's tasks.
    EXPECT_EQ(p->leaves, (std::vector<std::string>{"user"}));
    p = place("slurm", {"123", "alice", t.root(), true, {}});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->leaves, (std::vector<std::string>{"step_*/user"}));
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
