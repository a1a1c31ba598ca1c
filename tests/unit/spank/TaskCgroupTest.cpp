#include "TaskCgroup.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace colmet::spank;
using colmet::test::FakeTree;

namespace {

// /proc/self/mountinfo of a Debian 12 host with the v1 hybrid layout.
const char *k_mountinfo =
    "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 30 0:33 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "44 30 0:39 / /sys/fs/cgroup/perf_event rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,perf_event\n"
    "45 1 0:39 / /elsewhere/perf rw - cgroup cgroup rw,perf_event\n";

const char *k_proc_cgroup = "12:perf_event:/\n"
                            "8:pids:/slurm/uid_1000/job_5/step_0\n"
                            "5:memory:/\n"
                            "3:cpuset:/\n"
                            "2:cpu,cpuacct:/user.slice\n"
                            "1:name=systemd:/\n"
                            "0::/\n";

std::string read(const std::filesystem::path &p)
{
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST(TaskCgroupTest, finds_colmets_v1_hierarchies_under_the_root)
{
    auto m = colmet_v1_mounts(k_mountinfo, "/sys/fs/cgroup/");
    ASSERT_EQ(m.size(), 4U);
    EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
    EXPECT_EQ(m[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
    EXPECT_EQ(m[1].mount_point, "/sys/fs/cgroup/memory");
    EXPECT_EQ(m[2].mount_point, "/sys/fs/cgroup/pids");
    EXPECT_EQ(m[3].mount_point, "/sys/fs/cgroup/perf_event");
    EXPECT_TRUE(colmet_v1_mounts(k_mountinfo, "/other").empty());
}

TEST(TaskCgroupTest, targets_skip_hierarchies_slurm_manages_and_prefer_the_step)
{
    FakeTree t;
    std::vector<CgroupMount> mounts = {{t.path("cpu,cpuacct"), {"cpu", "cpuacct"}},
                                       {t.path("memory"), {"memory"}},
                                       {t.path("pids"), {"pids"}},
                                       {t.path("perf_event"), {"perf_event"}}};
    t.mkdir("cpu,cpuacct/slurm/uid_1000/job_5/step_0");
    t.mkdir("memory/slurm/uid_1000/job_5");  // no step directory: the job's
    t.mkdir("pids/slurm/uid_1000/job_5/step_0");
    t.mkdir("perf_event/slurm/uid_1000/job_5/step_0");
    auto targets =
        attach_targets(mounts, k_proc_cgroup, "/slurm/uid_1000/job_5", std::string("/slurm/uid_1000/job_5/step_0"));
    // pids: Slurm already put the task in the job's cgroup.
    EXPECT_EQ(targets,
              (std::vector<std::filesystem::path>{t.path("cpu,cpuacct/slurm/uid_1000/job_5/step_0/cgroup.procs"),
                                                  t.path("memory/slurm/uid_1000/job_5/cgroup.procs"),
                                                  t.path("perf_event/slurm/uid_1000/job_5/step_0/cgroup.procs")}));
    // Without a step sampler the job's directory is used.
    targets = attach_targets(mounts, k_proc_cgroup, "/slurm/uid_1000/job_5", std::nullopt);
    EXPECT_EQ(targets.back(), t.path("perf_event/slurm/uid_1000/job_5/cgroup.procs"));
}

TEST(TaskCgroupTest, attach_writes_the_pid_and_reports_failures)
{
    FakeTree t;
    t.write("a/cgroup.procs", "");
    ASSERT_TRUE(attach_pid({t.path("a/cgroup.procs")}, 4242).ok());
    EXPECT_EQ(read(t.path("a/cgroup.procs")), "4242");
    auto r = attach_pid({t.path("missing/cgroup.procs"), t.path("a/cgroup.procs")}, 7);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("missing/cgroup.procs"), std::string::npos) << r.error().message();
    EXPECT_EQ(read(t.path("a/cgroup.procs")), "7242");  // the later target was still written
}
