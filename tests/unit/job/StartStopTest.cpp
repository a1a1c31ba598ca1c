// colmet-job start and stop on fixture cgroup trees, with a stand-in for
// colmet-node (a script that records its arguments and sleeps): which cgroup
// levels start makes and records, what stop removes (exactly those, and a
// shared parent only with the last job under it), reused pids, a sampler
// that dies at start, and the hook-mode exit policy.
#include "job/SamplerRecord.hpp"
#include "job/StartCommand.hpp"
#include "job/StopCommand.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace colmet;
using namespace colmet::job;

namespace {

// The v1 hierarchies of the fixture (perf_event among them, so start never
// tries to mount one).
const std::vector<std::string> k_hierarchies = {"cpuacct", "memory", "perf_event"};

class StartStopTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        for (const auto &h : k_hierarchies)
            m_tree.write("cg/" + h + "/cgroup.procs", "");
        // colmet-node starts with SIGTERM blocked (it takes it through a
        // signalfd): the stand-in unblocks it and ends on it.
        write_node("node", "exec /usr/bin/python3 -c 'import signal, time; "
                           "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM}); time.sleep(60)'\n");
        write_node("node-fails", "echo 'colmet-node: bad option' >&2\nexit 3\n");
    }

    void TearDown() override
    {
        // A sampler a failed test left running.
        for (const auto &[path, record] : list_records(m_tree.path("run")))
            if (record && sampler_alive(*record))
                ::kill(record->pid, SIGKILL);
    }

    void write_node(const std::string &name, const std::string &body)
    {
        const fs::path script = m_tree.path(name);
        m_tree.write(name, "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n" + body);
        fs::permissions(script, fs::perms::owner_all);
    }

    StartOptions start_options(const std::string &job, const std::string &cgroup) const
    {
        StartOptions o;
        o.job_id = job;
        o.user = "alice";
        o.cgroup = cgroup;
        o.create_cgroup = true;
        o.run_dir = m_tree.path("run");
        o.cgroup_root = m_tree.path("cg");
        o.sysfs_root = m_tree.path("sys");
        o.log_file = m_tree.path("log/colmet.log");
        o.config = m_tree.path("colmet.conf");  // absent: colmet-node's defaults
        o.node_binary = m_tree.path("node");
        return o;
    }

    StopOptions stop_options(const std::string &job) const
    {
        StopOptions o;
        o.job_id = job;
        o.run_dir = m_tree.path("run");
        o.log_file = m_tree.path("log/colmet.log");
        o.timeout_s = 2;
        return o;
    }

    // The job's directory exists in these hierarchies.
    std::vector<std::string> present(const std::string &relative) const
    {
        std::vector<std::string> out;
        for (const auto &h : k_hierarchies)
            if (fs::is_directory(m_tree.path(std::string("cg/").append(h).append(relative))))
                out.push_back(h);
        return out;
    }

    std::vector<std::string> node_args(const std::string &name = "node") const
    {
        std::ifstream in(m_tree.path(name + ".args"));
        std::vector<std::string> out;
        for (std::string line; std::getline(in, line);)
            out.push_back(line);
        return out;
    }

    SamplerRecord record_of(const std::string &job) const
    {
        auto r = read_record(record_path(m_tree.path("run"), job));
        if (!r)
            throw std::runtime_error(r.error().message());
        return *r;
    }

    test::FakeTree m_tree;
};

// The value after `option` in an argument list ("" when absent).
std::string arg_after(const std::vector<std::string> &args, const std::string &option)
{
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == option)
            return args[i + 1];
    return "";
}

const std::vector<std::string> k_all = k_hierarchies;
const std::vector<std::string> k_none;

TEST_F(StartStopTest, start_makes_the_job_cgroups_and_records_them_stop_removes_exactly_those)
{
    m_tree.mkdir("cg/memory/other");  // not colmet's: stays
    ASSERT_EQ(start_command(start_options("42", "/oar/alice_42")), 0);

    const SamplerRecord r = record_of("42");
    EXPECT_TRUE(sampler_alive(r));
    EXPECT_TRUE(r.job_cgroup_created);
    EXPECT_EQ(r.created_from, "/oar") << "the topmost level that did not exist";
    EXPECT_EQ(r.perf_root, m_tree.path("cg/perf_event").string());
    EXPECT_TRUE(r.perf_cgroup_created);
    EXPECT_EQ(r.cgroup, "/oar/alice_42");
    EXPECT_EQ(present("/oar/alice_42"), k_all);

    const auto args = node_args();
    EXPECT_EQ(arg_after(args, "--job-id"), "42");
    EXPECT_EQ(arg_after(args, "--cgroup"), "/oar/alice_42");
    EXPECT_EQ(arg_after(args, "--cgroup-root"), m_tree.path("cg").string());
    EXPECT_EQ(arg_after(args, "--user"), "alice");
    EXPECT_EQ(arg_after(args, "--control-dir"), m_tree.path("run").string());
    EXPECT_EQ(arg_after(args, "--find-cgroup"), "") << "--cgroup names the job's directory everywhere";
    EXPECT_EQ(arg_after(args, "--sample-period"), "") << "colmet-node's default: not passed";
    EXPECT_EQ(arg_after(args, "--zeromq-uri"), "") << "colmet-node's default: not passed";
    EXPECT_EQ(r.period_s, 5) << "but recorded, as in force";
    EXPECT_EQ(r.collector, "tcp://127.0.0.1:5556");

    ASSERT_EQ(stop_command(stop_options("42")), 0);
    EXPECT_FALSE(sampler_alive(r)) << "SIGTERM reached the sampler";
    EXPECT_FALSE(fs::exists(record_path(m_tree.path("run"), "42")));
    EXPECT_EQ(present("/oar"), k_none) << "the levels start made are gone";
    EXPECT_TRUE(fs::is_directory(m_tree.path("cg/memory/other")));
}

TEST_F(StartStopTest, the_scheduler_s_cgroups_are_left_alone_and_only_colmet_s_perf_event_directory_goes)
{
    m_tree.mkdir("cg/cpuacct/oar/alice_43");  // made by OAR before its hook runs
    m_tree.mkdir("cg/memory/oar/alice_43");
    StartOptions o = start_options("43", "/oar/alice_43");
    o.create_cgroup = false;
    ASSERT_EQ(start_command(o), 0);
    const SamplerRecord r = record_of("43");
    EXPECT_FALSE(r.job_cgroup_created);
    EXPECT_TRUE(r.created_from.empty());
    EXPECT_TRUE(r.perf_cgroup_created);
    EXPECT_EQ(present("/oar/alice_43"), k_all);

    ASSERT_EQ(stop_command(stop_options("43")), 0);
    EXPECT_EQ(present("/oar/alice_43"), (std::vector<std::string>{"cpuacct", "memory"}));
}

TEST_F(StartStopTest, a_level_two_jobs_share_goes_with_the_last_of_them)
{
    ASSERT_EQ(start_command(start_options("1", "/oar/alice_1")), 0);
    ASSERT_EQ(start_command(start_options("2", "/oar/alice_2")), 0);
    EXPECT_EQ(record_of("1").created_from, "/oar");
    EXPECT_EQ(record_of("2").created_from, "/oar") << "made by a running job's start: colmet's to remove";

    ASSERT_EQ(stop_command(stop_options("1")), 0);
    EXPECT_EQ(present("/oar/alice_1"), k_none);
    EXPECT_EQ(present("/oar/alice_2"), k_all) << "the other job's directories stay";

    ASSERT_EQ(stop_command(stop_options("2")), 0);
    EXPECT_EQ(present("/oar"), k_none);
}

TEST_F(StartStopTest, a_sampler_that_dies_at_start_leaves_no_record_and_no_cgroup)
{
    StartOptions o = start_options("44", "/oar/alice_44");
    o.node_binary = m_tree.path("node-fails");
    EXPECT_EQ(start_command(o), k_exit_failed);
    EXPECT_FALSE(fs::exists(record_path(m_tree.path("run"), "44")));
    EXPECT_EQ(present("/oar"), k_none);
    EXPECT_EQ(arg_after(node_args("node-fails"), "--job-id"), "44") << "it did run";

    o.hook = true;  // the hook mode logs and exits 0, whatever happened
    EXPECT_EQ(start_command(o), 0);
    EXPECT_EQ(present("/oar"), k_none);
}

TEST_F(StartStopTest, a_second_start_of_a_running_job_changes_nothing)
{
    ASSERT_EQ(start_command(start_options("45", "/oar/alice_45")), 0);
    const pid_t first = record_of("45").pid;
    EXPECT_EQ(start_command(start_options("45", "/oar/alice_45")), 0);
    EXPECT_EQ(record_of("45").pid, first);
    ASSERT_EQ(stop_command(stop_options("45")), 0);
}

TEST_F(StartStopTest, a_reused_pid_is_never_signalled)
{
    // A live process that is not the sampler: the record's start time is
    // another process's (the pid was reused after the sampler died).
    const pid_t bystander = ::fork();
    ASSERT_GE(bystander, 0);
    if (bystander == 0) {
        ::pause();
        _exit(0);
    }
    SamplerRecord r;
    r.pid = bystander;
    r.start_ticks = process_start_ticks(bystander) + 1;
    r.job_id = "46";
    r.user = "alice";
    r.cgroup = "/oar/alice_46";
    r.cgroup_root = m_tree.path("cg");
    fs::create_directories(m_tree.path("run"));
    ASSERT_TRUE(write_record(record_path(m_tree.path("run"), "46"), r));
    EXPECT_FALSE(sampler_alive(r));

    EXPECT_EQ(stop_command(stop_options("46")), 0);
    EXPECT_FALSE(fs::exists(record_path(m_tree.path("run"), "46")));
    int status = 0;
    EXPECT_EQ(::waitpid(bystander, &status, WNOHANG), 0) << "the bystander was signalled";

    // start takes such a record as stale and starts a sampler of its own.
    ASSERT_TRUE(write_record(record_path(m_tree.path("run"), "46"), r));
    ASSERT_EQ(start_command(start_options("46", "/oar/alice_46")), 0);
    EXPECT_NE(record_of("46").pid, bystander);
    EXPECT_EQ(::waitpid(bystander, &status, WNOHANG), 0);
    ASSERT_EQ(stop_command(stop_options("46")), 0);
    ::kill(bystander, SIGKILL);
    ::waitpid(bystander, &status, 0);
}

// Slurm's profile decides from the node whether Slurm keeps cgroups there
// (a top-level slurm directory colmet did not make): then colmet makes only
// its perf_event directory and the sampler finds the job's from its
// processes; else (linuxproc) colmet makes the job's cgroups itself.
TEST_F(StartStopTest, slurm_with_its_own_cgroups_gets_only_colmet_s_perf_event_directory)
{
    m_tree.mkdir("cg/memory/slurm");  // slurmd made it at start (a cgroup plugin is configured)
    StartOptions o = start_options("7.2", "");
    o.scheduler = "slurm";
    o.user = "root";  // the perf_event directory is per uid
    o.create_cgroup = false;
    ASSERT_EQ(start_command(o), 0);
    const SamplerRecord r = record_of("7.2");
    EXPECT_EQ(r.cgroup, "/slurm/uid_0/job_7/step_2");
    EXPECT_FALSE(r.job_cgroup_created);
    EXPECT_EQ(present("/slurm/uid_0/job_7/step_2"), (std::vector<std::string>{"perf_event"}));
    const auto args = node_args();
    EXPECT_EQ(arg_after(args, "--cgroup"), "/slurm/uid_0/job_7/step_2");
    EXPECT_EQ(arg_after(args, "--find-cgroup"), "job_7/step_2");
    ASSERT_EQ(stop_command(stop_options("7.2")), 0);
    EXPECT_EQ(present("/slurm/uid_0/job_7/step_2"), k_none);
    EXPECT_TRUE(fs::is_directory(m_tree.path("cg/memory/slurm"))) << "Slurm's own";
}

TEST_F(StartStopTest, slurm_without_cgroups_of_its_own_gets_the_job_s_cgroups_from_colmet)
{
    StartOptions o = start_options("8", "");
    o.scheduler = "slurm";
    o.user = "root";
    o.create_cgroup = false;
    ASSERT_EQ(start_command(o), 0);
    const SamplerRecord r = record_of("8");
    EXPECT_EQ(r.cgroup, "/slurm/uid_0/job_8");
    EXPECT_TRUE(r.job_cgroup_created);
    EXPECT_EQ(r.created_from, "/slurm");
    EXPECT_EQ(present("/slurm/uid_0/job_8"), k_all);

    // A second job: /slurm is colmet's (a running job's record says so), so
    // it is still "no cgroups of Slurm's own".
    StartOptions second = o;
    second.job_id = "9";
    ASSERT_EQ(start_command(second), 0);
    EXPECT_TRUE(record_of("9").job_cgroup_created);
    ASSERT_EQ(stop_command(stop_options("8")), 0);
    ASSERT_EQ(stop_command(stop_options("9")), 0);
    EXPECT_EQ(present("/slurm"), k_none);
}

TEST_F(StartStopTest, usage_errors_exit_64_and_nothing_to_stop_exits_1_except_in_hook_mode)
{
    StartOptions bad_user = start_options("47", "/oar/x_47");
    bad_user.user = "a b";
    EXPECT_EQ(start_command(bad_user), k_exit_usage);
    StartOptions bad_id = start_options("a/b", "/oar/x_47");
    EXPECT_EQ(start_command(bad_id), k_exit_usage);
    StartOptions neither = start_options("47", "");
    EXPECT_EQ(start_command(neither), k_exit_usage) << "no --cgroup and no --scheduler";
    EXPECT_EQ(present("/oar"), k_none);
    EXPECT_EQ(stop_command(stop_options("47")), k_exit_failed);

    bad_user.hook = true;
    EXPECT_EQ(start_command(bad_user), 0);
    StopOptions stop = stop_options("47");
    stop.hook = true;
    EXPECT_EQ(stop_command(stop), 0);
}

}  // namespace

TEST_F(StartStopTest, start_passes_colmet_node_what_differs_from_its_own_defaults)
{
    StartOptions o = start_options("44", "/oar/alice_44");
    o.period_s = 0.5;
    o.zeromq_uri = "tcp://collector:5556";
    o.spec = "period=2";
    ASSERT_EQ(start_command(o), 0);
    const auto args = node_args();
    EXPECT_EQ(std::stod(arg_after(args, "--sample-period")), 2) << "the spec's period wins";
    EXPECT_EQ(arg_after(args, "--zeromq-uri"), "tcp://collector:5556");
    EXPECT_EQ(record_of("44").period_s, 2);
    ASSERT_EQ(stop_command(stop_options("44")), 0);
}
