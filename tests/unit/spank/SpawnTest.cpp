#include "Spawn.hpp"

#include "FakeHelper.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <thread>
#include <unistd.h>

using namespace colmet::spank;
using colmet::test::FakeTree;

TEST(SpawnTest, runs_and_reports_the_exit_status)
{
    FakeTree t;
    std::string helper = test::write_fake_helper(t, "exit 3");
    auto r = run_helper({helper, "start", "--job-id", "1"}, 5);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->exit_status, 3);
    EXPECT_FALSE(r->timed_out);
    EXPECT_EQ(test::fake_calls(t), (std::vector<std::string>{"start --job-id 1"}));
}

// Some host programs reap their children themselves; the wait must still
// last until the helper is gone.
TEST(SpawnTest, waits_for_the_helper_when_the_host_reaps_children)
{
    FakeTree t;
    std::string helper = test::write_fake_helper(t, "sleep 0.4");
    struct sigaction ignore {};
    struct sigaction old {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGCHLD, &ignore, &old);
    auto start = std::chrono::steady_clock::now();
    auto r = run_helper({helper}, 5);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::sigaction(SIGCHLD, &old, nullptr);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->status_unknown);
    EXPECT_FALSE(r->timed_out);
    EXPECT_GE(took, 0.35);
}

TEST(SpawnTest, kills_a_helper_that_overruns)
{
    FakeTree t;
    std::string helper = test::write_fake_helper(t, "exec sleep 30");
    auto start = std::chrono::steady_clock::now();
    auto r = run_helper({helper}, 0.3);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->timed_out);
    EXPECT_LT(took, 5.0);
}

TEST(SpawnTest, passes_no_file_descriptor_and_a_fixed_environment)
{
    FakeTree t;
    // An inheritable descriptor at a known number, like slurmstepd's sockets.
    int fd = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::dup2(fd, 57), 57);
    ::close(fd);
    ::setenv("COLMET_SPAWN_TEST_SECRET", "1", 1);
    std::string out = t.path("out").string();
    std::string helper = test::write_fake_helper(
        t, "{ [ -e /proc/$$/fd/57 ] && echo fd57-leaked || echo fd57-closed; "
           "[ -e /proc/$$/fd/0 ] && readlink /proc/$$/fd/0; echo \"secret=${COLMET_SPAWN_TEST_SECRET:-unset}\"; "
           "echo \"path=$PATH\"; } > '" +
               out + "'");
    auto r = run_helper({helper}, 5);
    ::close(57);
    ::unsetenv("COLMET_SPAWN_TEST_SECRET");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 0);
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), "fd57-closed\n/dev/null\nsecret=unset\npath=/usr/sbin:/usr/bin:/sbin:/bin\n");
}

TEST(SpawnTest, detached_helper_is_not_our_child_and_runs_in_its_own_session)
{
    FakeTree t;
    std::string out = t.path("out").string();
    std::string helper = test::write_fake_helper(
        t, "{ echo \"ppid=$(awk '/^PPid/ {print $2}' /proc/$$/status)\"; echo \"sid=$(ps -o sid= -p $$ | tr -d ' ')\"; "
           "echo \"pid=$$\"; } > '" +
               out + ".tmp'; mv '" + out + ".tmp' '" + out + "'");
    auto pid = spawn_detached({helper, "stop", "--job-id", "9.1"});
    ASSERT_TRUE(pid.ok()) << pid.error().message();
    for (int i = 0; i < 500 && !std::filesystem::exists(out); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    EXPECT_EQ(text.find("ppid=" + std::to_string(::getpid()) + "\n"), std::string::npos) << text;
    EXPECT_NE(text.find("sid="), std::string::npos) << text;
    EXPECT_EQ(text.find("sid=" + std::to_string(::getsid(0)) + "\n"), std::string::npos) << text;  // a new session
    EXPECT_NE(text.find("pid=" + std::to_string(*pid) + "\n"), std::string::npos) << text;
    EXPECT_EQ(test::fake_calls(t), (std::vector<std::string>{"stop --job-id 9.1"}));
    EXPECT_FALSE(spawn_detached({"relative"}).ok());
}

TEST(SpawnTest, refuses_relative_paths_and_reports_missing_programs)
{
    EXPECT_FALSE(run_helper({"colmet-job"}, 1).ok());
    EXPECT_FALSE(run_helper({}, 1).ok());
    auto r = run_helper({"/nonexistent/colmet-job"}, 1);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("/nonexistent/colmet-job"), std::string::npos);
}
