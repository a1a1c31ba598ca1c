#include "Actions.hpp"

#include "FakeHelper.hpp"
#include "JobMarker.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace colmet::spank;
using colmet::test::FakeTree;
using Calls = std::vector<std::string>;

namespace {

struct Captured {
    std::vector<std::string> info, error, debug;
    Log log()
    {
        return Log{[this](const std::string &m) { info.push_back(m); },
                   [this](const std::string &m) { error.push_back(m); },
                   [this](const std::string &m) { debug.push_back(m); }};
    }
};

class ActionsTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_config.colmet_job = test::write_fake_helper(m_tree);
        m_config.run_dir = m_tree.path("run").string();
        m_config.cgroup_root = m_tree.path("cgroup").string();
        m_config.metrics = "perfhw";
        m_tree.mkdir("cgroup/cpuacct");
    }
    std::string run_dir() const { return m_config.run_dir; }

    FakeTree m_tree;
    PluginConfig m_config;
    Captured m_log;
    JobRef m_job{42, 1001, "alice", {}};
};

}  // namespace

TEST_F(ActionsTest, job_wanted_matrix)
{
    PluginConfig c;
    EXPECT_FALSE(job_wanted(c, std::nullopt));
    EXPECT_TRUE(job_wanted(c, UserChoice{}));
    EXPECT_FALSE(job_wanted(c, UserChoice{Request::off, ""}));
    c.mode = Mode::all;
    EXPECT_TRUE(job_wanted(c, std::nullopt));
    EXPECT_FALSE(job_wanted(c, UserChoice{Request::off, ""}));
    EXPECT_TRUE(job_wanted(c, UserChoice{Request::spec, "period=1"}));
}

TEST_F(ActionsTest, prolog_without_colmet_does_nothing)
{
    job_prolog(m_config, m_job, std::nullopt, m_log.log());
    EXPECT_TRUE(test::fake_calls(m_tree).empty());
    EXPECT_FALSE(read_marker(run_dir(), 42).has_value());
    job_epilog(m_config, 42, m_log.log());
    EXPECT_TRUE(test::fake_calls(m_tree).empty());
    EXPECT_TRUE(m_log.error.empty());
}

TEST_F(ActionsTest, prolog_starts_the_job_sampler_and_epilog_stops_it)
{
    job_prolog(m_config, m_job, UserChoice{Request::spec, "perfhw:task_clock"}, m_log.log());
    EXPECT_EQ(read_marker(run_dir(), 42).value_or("?"), "perfhw:task_clock");
    Calls calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 1U);
    EXPECT_EQ(calls[0], "start --job-id 42 --user alice --scheduler slurm --hook --run-dir " + run_dir() +
                            " --cgroup-root " + m_config.cgroup_root +
                            " --spec perfhw:task_clock -- --meta slurm_job_id=42");
    ASSERT_EQ(m_log.info.size(), 1U);
    EXPECT_EQ(m_log.info[0], "colmet: job 42: sampler started (spec perfhw:task_clock)");

    m_tree.write("run/42.3.pid", "1");  // a step sampler whose slurmstepd died
    job_epilog(m_config, 42, m_log.log());
    calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 3U);
    EXPECT_EQ(calls[1], "stop --hook --job-id 42.3 --run-dir " + run_dir());
    EXPECT_EQ(calls[2], "stop --hook --job-id 42 --run-dir " + run_dir());
    EXPECT_FALSE(read_marker(run_dir(), 42).has_value());
    EXPECT_TRUE(m_log.error.empty());
}

TEST_F(ActionsTest, site_mode_samples_jobs_without_the_option_with_the_site_metrics)
{
    m_config.mode = Mode::all;
    job_prolog(m_config, m_job, std::nullopt, m_log.log());
    EXPECT_EQ(read_marker(run_dir(), 42).value_or("?"), "perfhw");
    ASSERT_EQ(test::fake_calls(m_tree).size(), 1U);
    job_prolog(m_config, JobRef{43, 1001, "alice", {}}, UserChoice{Request::off, ""}, m_log.log());
    EXPECT_EQ(test::fake_calls(m_tree).size(), 1U);
}

TEST_F(ActionsTest, a_bad_spec_in_the_prolog_falls_back_to_the_defaults)
{
    job_prolog(m_config, m_job, UserChoice{Request::spec, "perfhw,bogus"}, m_log.log());
    ASSERT_EQ(m_log.error.size(), 1U);
    EXPECT_NE(m_log.error[0].find("colmet: job 42: ignoring colmet spec 'perfhw,bogus'"), std::string::npos);
    EXPECT_EQ(read_marker(run_dir(), 42).value_or("?"), "perfhw");
}

TEST_F(ActionsTest, a_failing_helper_is_logged_not_fatal)
{
    m_config.colmet_job = test::write_fake_helper(m_tree, "exit 70");
    job_prolog(m_config, m_job, UserChoice{}, m_log.log());
    ASSERT_EQ(m_log.error.size(), 1U);
    EXPECT_NE(m_log.error[0].find("exited with status 70"), std::string::npos) << m_log.error[0];
    m_config.colmet_job = "/nonexistent/colmet-job";
    job_prolog(m_config, m_job, UserChoice{}, m_log.log());
    ASSERT_EQ(m_log.error.size(), 2U);
    EXPECT_EQ(m_log.error[1].rfind("colmet: job 42: colmet-job start: run /nonexistent/colmet-job:", 0), 0U)
        << m_log.error[1];
}

TEST_F(ActionsTest, steps_of_a_sampled_job_get_their_own_sampler)
{
    ASSERT_TRUE(write_marker(run_dir(), 42, "period=1").ok());
    StepState s = step_start(m_config, m_job, 3, std::nullopt, m_log.log());
    EXPECT_TRUE(s.job_sampled);
    EXPECT_TRUE(s.step_sampler);
    EXPECT_FALSE(s.v2);
    EXPECT_EQ(s.step_id, "42.3");
    EXPECT_EQ(s.job_rel, "/slurm/uid_1001/job_42");
    EXPECT_EQ(s.step_rel, "/slurm/uid_1001/job_42/step_3");
    Calls calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 1U);
    EXPECT_EQ(calls[0], "start --job-id 42.3 --user alice --scheduler slurm --hook "
                        "--run-dir " +
                            run_dir() + " --cgroup-root " + m_config.cgroup_root +
                            " --spec period=1 -- --meta slurm_job_id=42 --meta slurm_step_id=3");
    step_stop(m_config, s, m_log.log());  // detached: wait for the call to show
    for (int i = 0; i < 200 && test::fake_calls(m_tree).size() < 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 2U);
    EXPECT_EQ(calls[1], "stop --hook --job-id 42.3 --run-dir " + run_dir());
}

TEST_F(ActionsTest, the_last_task_exit_stops_the_step_sampler_and_asks_the_job_for_a_sample)
{
    m_config.colmet_ctl = m_config.colmet_job;  // the fake records both
    ASSERT_TRUE(write_marker(run_dir(), 42, "").ok());
    StepState s = step_start(m_config, m_job, 3, std::nullopt, m_log.log());
    s.local_tasks = 2;
    ASSERT_EQ(test::fake_calls(m_tree).size(), 1U);
    task_exit(m_config, s, m_log.log());  // one task of two: nothing yet
    EXPECT_EQ(test::fake_calls(m_tree).size(), 1U);
    task_exit(m_config, s, m_log.log());
    Calls calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 3U);
    EXPECT_EQ(calls[1], "stop --hook --job-id 42.3 --run-dir " + run_dir());
    EXPECT_EQ(calls[2], "--job-id 42 --sample-now --control-dir " + run_dir() + " --timeout 3");
    EXPECT_TRUE(s.step_stopped);
    step_stop(m_config, s, m_log.log());  // already stopped: no second stop
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(test::fake_calls(m_tree).size(), 3U);
}

TEST_F(ActionsTest, the_batch_step_asks_the_job_for_a_sample_at_its_end)
{
    m_config.colmet_ctl = m_config.colmet_job;
    ASSERT_TRUE(write_marker(run_dir(), 42, "").ok());
    StepState s = step_start(m_config, m_job, 0xfffffffbU, std::nullopt, m_log.log());  // SLURM_BATCH_SCRIPT
    s.local_tasks = 1;
    EXPECT_FALSE(s.step_sampler);
    task_exit(m_config, s, m_log.log());
    EXPECT_EQ(test::fake_calls(m_tree),
              (Calls{"--job-id 42 --sample-now --control-dir " + run_dir() + " --timeout 3"}));
}

TEST_F(ActionsTest, special_steps_and_unsampled_jobs_get_no_step_sampler)
{
    ASSERT_TRUE(write_marker(run_dir(), 42, "").ok());
    for (uint32_t special : {0xfffffffbU /* batch */, 0xfffffffcU /* extern */, 0xfffffffaU /* interactive */}) {
        StepState s = step_start(m_config, m_job, special, std::nullopt, m_log.log());
        EXPECT_TRUE(s.job_sampled);  // its tasks still go into the job's cgroups
        EXPECT_FALSE(s.step_sampler);
    }
    StepState off = step_start(m_config, m_job, 1, UserChoice{Request::off, ""}, m_log.log());
    EXPECT_FALSE(off.step_sampler);
    m_config.steps = false;
    EXPECT_FALSE(step_start(m_config, m_job, 1, std::nullopt, m_log.log()).step_sampler);
    m_config.steps = true;
    StepState other = step_start(m_config, JobRef{77, 1001, "alice", {}}, 0, std::nullopt, m_log.log());
    EXPECT_FALSE(other.job_sampled);
    EXPECT_FALSE(other.step_sampler);
    EXPECT_TRUE(test::fake_calls(m_tree).empty());
    step_stop(m_config, other, m_log.log());
    EXPECT_TRUE(test::fake_calls(m_tree).empty());
}

TEST_F(ActionsTest, a_step_with_colmet_in_an_unsampled_allocation_is_sampled_alone)
{
    StepState s = step_start(m_config, m_job, 0, UserChoice{}, m_log.log());
    EXPECT_FALSE(s.job_sampled);
    EXPECT_TRUE(s.step_sampler);
    Calls calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 1U);
    EXPECT_NE(calls[0].find("--job-id 42.0 "), std::string::npos);
    EXPECT_NE(calls[0].find("--spec perfhw "), std::string::npos);  // the site's metrics
}

TEST_F(ActionsTest, task_attach_writes_into_the_step_directories)
{
    m_tree.write("cgroup/perf_event/slurm/uid_1001/job_42/step_3/cgroup.procs", "");
    m_tree.write("cgroup/perf_event/slurm/uid_1001/job_42/cgroup.procs", "");
    std::string mountinfo = "44 30 0:39 / " + m_config.cgroup_root + "/perf_event rw - cgroup cgroup rw,perf_event\n";
    StepState s;
    s.job_sampled = true;
    s.step_sampler = true;
    s.job_rel = "/slurm/uid_1001/job_42";
    s.step_rel = "/slurm/uid_1001/job_42/step_3";
    task_attach(s, 999, mountinfo, "12:perf_event:/\n", m_config, m_log.log());
    EXPECT_TRUE(m_log.error.empty());
    std::ifstream in(m_tree.path("cgroup/perf_event/slurm/uid_1001/job_42/step_3/cgroup.procs"));
    std::string pid;
    in >> pid;
    EXPECT_EQ(pid, "999");
    s.v2 = true;  // v2: Slurm's own cgroup, nothing written
    m_tree.write("cgroup/perf_event/slurm/uid_1001/job_42/step_3/cgroup.procs", "");
    task_attach(s, 1000, mountinfo, "12:perf_event:/\n", m_config, m_log.log());
    std::ifstream again(m_tree.path("cgroup/perf_event/slurm/uid_1001/job_42/step_3/cgroup.procs"));
    std::string none;
    again >> none;
    EXPECT_EQ(none, "");
}

TEST_F(ActionsTest, the_prolog_passes_the_job_context_and_the_first_named_step_sends_its_own)
{
    m_config.colmet_ctl = m_config.colmet_job;  // the fake records both
    JobRef job = m_job;
    job.context = {{"partition", "debug"}, {"job_nodes", "1"}};
    job_prolog(m_config, job, UserChoice{}, m_log.log());
    Calls calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 1U);
    EXPECT_NE(calls[0].find(" --context partition=debug --context job_nodes=1 -- --meta slurm_job_id=42"),
              std::string::npos)
        << calls[0];

    // The extern step knows no name: it sends what it has, and claims nothing.
    JobRef step = m_job;
    step.context = {{"host_memory_mib", "512"}};
    step_start(m_config, step, 0xfffffffcU, std::nullopt, m_log.log());
    calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 2U);
    EXPECT_EQ(calls[1], "--job-id 42 --control-dir " + run_dir() + " --timeout 3 --context host_memory_mib=512");
    // The batch step has the name: sent once, whatever steps follow.
    step.context = {{"job_name", "my run"}, {"host_memory_mib", "512"}};
    step_start(m_config, step, 0xfffffffbU, std::nullopt, m_log.log());
    step_start(m_config, step, 0xfffffffbU, std::nullopt, m_log.log());
    calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 3U);
    EXPECT_EQ(calls[2], "--job-id 42 --control-dir " + run_dir() +
                            " --timeout 3 --context job_name=my run --context host_memory_mib=512");
    // A job that is not sampled gets nothing; the epilog removes the claim.
    step_start(m_config, JobRef{77, 1001, "alice", {{"job_name", "x"}}}, 0xfffffffbU, std::nullopt, m_log.log());
    EXPECT_EQ(test::fake_calls(m_tree).size(), 3U);
    job_epilog(m_config, 42, m_log.log());
    EXPECT_TRUE(claim_context(run_dir(), 42));  // gone with the marker: claimable again
    EXPECT_TRUE(m_log.error.empty());
}

TEST_F(ActionsTest, srun_prints_its_steps_summary_on_a_terminal_only)
{
    m_config.summary_dir = "/shared/colmet";
    m_config.summary_wait = 7;
    srun_summary(m_config, 42, 3, UserChoice{}, true, m_log.log());
    Calls calls = test::fake_calls(m_tree);
    ASSERT_EQ(calls.size(), 1U);
    EXPECT_EQ(calls[0], "summary --wait 7 /shared/colmet/42.3.json");
    // Not on a terminal, not asked for, not a numbered step, no directory,
    // no step samplers: nothing.
    srun_summary(m_config, 42, 3, UserChoice{}, false, m_log.log());
    srun_summary(m_config, 42, 3, std::nullopt, true, m_log.log());
    srun_summary(m_config, 42, 3, UserChoice{Request::off, ""}, true, m_log.log());
    srun_summary(m_config, 42, 0xfffffffbU, UserChoice{}, true, m_log.log());
    m_config.steps = false;
    srun_summary(m_config, 42, 3, UserChoice{}, true, m_log.log());
    m_config.steps = true;
    m_config.summary_dir.clear();
    srun_summary(m_config, 42, 3, UserChoice{}, true, m_log.log());
    EXPECT_EQ(test::fake_calls(m_tree).size(), 1U);
    // mode=all samples a job that did not say --colmet.
    m_config.summary_dir = "/shared/colmet";
    m_config.mode = Mode::all;
    srun_summary(m_config, 43, 0, std::nullopt, true, m_log.log());
    EXPECT_EQ(test::fake_calls(m_tree).size(), 2U);
    EXPECT_TRUE(m_log.error.empty());
}
