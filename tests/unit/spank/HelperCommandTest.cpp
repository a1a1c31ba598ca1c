#include "HelperCommand.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace colmet::spank;
using Argv = std::vector<std::string>;

namespace {

PluginConfig config()
{
    PluginConfig c;
    c.colmet_job = "/usr/sbin/colmet-job";
    c.run_dir = "/run/colmet";
    return c;
}

}  // namespace

TEST(HelperCommandTest, ids_and_cgroups)
{
    EXPECT_EQ(sampler_id(42), "42");
    EXPECT_EQ(sampler_id(42, 3), "42.3");
    JobRef job{42, 1001, "alice", {}};
    // colmet's perf_event directories; Slurm's own are found from the tasks.
    EXPECT_EQ(job_cgroup(job), "/slurm/uid_1001/job_42");
    EXPECT_EQ(step_cgroup(job, 0), "/slurm/uid_1001/job_42/step_0");
}

TEST(HelperCommandTest, job_start_minimal)
{
    JobRef job{42, 1001, "alice", {}};
    EXPECT_EQ(
        job_start_command(config(), job, ""),
        (Argv{"/usr/sbin/colmet-job", "start", "--job-id", "42", "--user", "alice", "--scheduler", "slurm", "--hook",
              "--run-dir", "/run/colmet", "--cgroup-root", "/sys/fs/cgroup", "--", "--meta", "slurm_job_id=42"}));
}

TEST(HelperCommandTest, job_start_with_everything)
{
    PluginConfig c = config();
    c.collector = "tcp://c:5556";
    c.period = 0.5;
    c.log_file = "/var/log/colmet-job.log";
    JobRef job{42, 1001, "alice", {}};
    EXPECT_EQ(job_start_command(c, job, "perfhw"), (Argv{"/usr/sbin/colmet-job",
                                                         "start",
                                                         "--job-id",
                                                         "42",
                                                         "--user",
                                                         "alice",
                                                         "--scheduler",
                                                         "slurm",
                                                         "--hook",
                                                         "--run-dir",
                                                         "/run/colmet",
                                                         "--cgroup-root",
                                                         "/sys/fs/cgroup",
                                                         "--spec",
                                                         "perfhw",
                                                         "--zeromq-uri",
                                                         "tcp://c:5556",
                                                         "--sample-period",
                                                         "0.5",
                                                         "--log-file",
                                                         "/var/log/colmet-job.log",
                                                         "--",
                                                         "--meta",
                                                         "slurm_job_id=42"}));
}

TEST(HelperCommandTest, step_start_names_the_step)
{
    JobRef job{42, 1001, "alice", {}};
    EXPECT_EQ(step_start_command(config(), job, 3, "period=1"), (Argv{"/usr/sbin/colmet-job",
                                                                      "start",
                                                                      "--job-id",
                                                                      "42.3",
                                                                      "--user",
                                                                      "alice",
                                                                      "--scheduler",
                                                                      "slurm",
                                                                      "--hook",
                                                                      "--run-dir",
                                                                      "/run/colmet",
                                                                      "--cgroup-root",
                                                                      "/sys/fs/cgroup",
                                                                      "--spec",
                                                                      "period=1",
                                                                      "--",
                                                                      "--meta",
                                                                      "slurm_job_id=42",
                                                                      "--meta",
                                                                      "slurm_step_id=3"}));
}

TEST(HelperCommandTest, stop)
{
    PluginConfig c = config();
    EXPECT_EQ(stop_command(c, "42.3"),
              (Argv{"/usr/sbin/colmet-job", "stop", "--hook", "--job-id", "42.3", "--run-dir", "/run/colmet"}));
    c.log_file = "/l";
    EXPECT_EQ(stop_command(c, "42").back(), "/l");
    c.spool_dir = "/var/spool/site";
    const Argv with_spool = stop_command(c, "42");
    ASSERT_GE(with_spool.size(), 2u);
    EXPECT_EQ(with_spool[with_spool.size() - 2], "--spool-dir");
    EXPECT_EQ(with_spool.back(), "/var/spool/site");
    const Argv start = job_start_command(c, JobRef{42, 1001, "alice", {}}, "");
    EXPECT_NE(std::find(start.begin(), start.end(), "/var/spool/site"), start.end());
}
