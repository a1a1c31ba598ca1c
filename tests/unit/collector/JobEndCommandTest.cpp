// The site's on-job-end command (collector/notify/JobEndCommand): real
// /bin/sh commands get the summary on standard input and the job in their
// environment; no more run at once than allowed; one over its time is
// killed with what it started; failures and drops are counted; submit()
// never waits for a command; at stop the queued ones are dropped.
#include "collector/notify/JobEndCommand.hpp"
#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace colmet;
using namespace colmet::collector;
using namespace colmet::collector::notify;
using Clock = std::chrono::steady_clock;

namespace {

std::string slurp_file(const std::filesystem::path &p)
{
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

EndedJob job(const std::string &id, std::string json = "{}\n")
{
    return {id, "alice", "/var/lib/colmet/" + id + ".h5", std::move(json)};
}

// Wait until the runner has finished `n` commands (succeeded or failed).
bool wait_finished(const JobEndCommand &runner, uint64_t n, double seconds = 20)
{
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
        const auto s = runner.stats();
        if (s.succeeded + s.failed >= n)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

}  // namespace

TEST(JobEndCommandTest, the_command_reads_the_summary_and_sees_the_job)
{
    test::FakeTree tree;
    const auto out = tree.path("out");
    JobEndCommand runner({"cat > " + out.string() + ".$COLMET_JOB_ID; echo \"$COLMET_JOB_USER $COLMET_JOB_FILE\" >> " +
                              out.string() + ".$COLMET_JOB_ID",
                          10, 2, 10});
    std::string big(200'000, 'x');  // more than a pipe holds: written as the command reads
    runner.submit(job("42", "{\"job_id\": \"42\"}\n"));
    runner.submit(job("43", big + "\n"));
    ASSERT_TRUE(wait_finished(runner, 2));
    EXPECT_EQ(slurp_file(out.string() + ".42"), "{\"job_id\": \"42\"}\nalice /var/lib/colmet/42.h5\n");
    EXPECT_EQ(slurp_file(out.string() + ".43"), big + "\nalice /var/lib/colmet/43.h5\n");
    const auto s = runner.stats();
    EXPECT_EQ(s.started, 2u);
    EXPECT_EQ(s.succeeded, 2u);
    EXPECT_EQ(s.failed, 0u);
}

TEST(JobEndCommandTest, no_more_run_at_once_than_allowed_and_submit_never_waits)
{
    test::FakeTree tree;
    // Each command notes its start and end times; 0.3 s each.
    const auto log = tree.path("log");
    JobEndCommand runner(
        {"echo start $(date +%s.%N) >> " + log.string() + "; sleep 0.3; echo end $(date +%s.%N) >> " + log.string(), 10,
         2, 100});
    const auto t0 = Clock::now();
    for (int i = 0; i < 6; ++i)
        runner.submit(job(std::to_string(i)));
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(100)) << "submit waited for the commands";
    ASSERT_TRUE(wait_finished(runner, 6));
    EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(850)) << "6 commands of 0.3 s, 2 at a time: 3 rounds";
    // At no instant were more than 2 running.
    std::istringstream lines(slurp_file(log));
    std::vector<std::pair<double, int>> events;
    std::string word;
    double t = 0;
    while (lines >> word >> t)
        events.emplace_back(t, word == "start" ? 1 : -1);
    ASSERT_EQ(events.size(), 12u);
    std::sort(events.begin(), events.end());
    int running = 0, most = 0;
    for (const auto &[when, delta] : events)
        most = std::max(most, running += delta);
    EXPECT_EQ(most, 2);
    EXPECT_EQ(runner.stats().succeeded, 6u);
}

TEST(JobEndCommandTest, a_command_over_its_time_is_killed_with_what_it_started_and_failures_are_counted)
{
    test::FakeTree tree;
    const auto pidfile = tree.path("grandchild");
    JobEndCommand runner({"if [ \"$COLMET_JOB_ID\" = slow ]; then sleep 300 & echo $! > " + pidfile.string() +
                              "; wait; elif [ \"$COLMET_JOB_ID\" = bad ]; then echo no such mailbox >&2; exit 3; fi",
                          0.5, 4, 10});
    const auto t0 = Clock::now();
    runner.submit(job("slow"));
    runner.submit(job("bad"));
    runner.submit(job("good"));
    ASSERT_TRUE(wait_finished(runner, 3));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
    const auto s = runner.stats();
    EXPECT_EQ(s.succeeded, 1u);
    EXPECT_EQ(s.failed, 2u);
    EXPECT_EQ(s.timed_out, 1u);
    // The sleep the slow command started was killed with it.
    // (Killed, it may stay a zombie until whoever adopted it reaps it.)
    const std::string grandchild = slurp_file(pidfile);
    ASSERT_FALSE(grandchild.empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string stat = slurp_file("/proc/" + grandchild.substr(0, grandchild.find('\n')) + "/stat");
    EXPECT_TRUE(stat.empty() || stat.find(") Z ") != std::string::npos) << "still runs: " << stat;
    EXPECT_EQ(runner.stats_text(), "on-job-end: 3 run, 1 succeeded, 2 failed (1 timed out), 0 dropped");
}

TEST(JobEndCommandTest, a_full_queue_and_a_stop_drop_jobs_and_count_them)
{
    JobEndCommand runner({"sleep 0.5", 10, 1, 2});
    runner.submit(job("0"));
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (runner.stats().started == 0 && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // 0 runs; 1 and 2 wait; 3 and 4 find the queue full.
    for (int i = 1; i < 5; ++i)
        runner.submit(job(std::to_string(i)));
    EXPECT_EQ(runner.stats().dropped, 2u);
    runner.stop();  // waits for 0, drops 1 and 2
    const auto after = runner.stats();
    EXPECT_EQ(after.started, 1u);
    EXPECT_EQ(after.succeeded, 1u);
    EXPECT_EQ(after.dropped, 4u);
    runner.submit(job("late"));
    EXPECT_EQ(runner.stats().dropped, 5u) << "nothing runs after the stop";
}
