// The launcher (launch/Launch.hpp, launch/Wait.hpp) with real processes:
// what each field of a LaunchSpec gives the child, as the child itself
// reports it through /bin/sh, and how failures come back.
#include "launch/Launch.hpp"
#include "launch/Wait.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using namespace colmet;
using namespace colmet::launch;

namespace {

class LaunchTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/colmet-launch-test.XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
    }
    void TearDown() override { fs::remove_all(m_dir); }

    std::string path(const std::string &name) const { return (m_dir / name).string(); }

    // A /bin/sh script whose standard output goes to `out` (appended).
    LaunchSpec shell(const std::string &script, const std::string &out)
    {
        LaunchSpec spec;
        spec.argv = {"/bin/sh", "-c", script};
        spec.out = Stdio::append_to(path(out));
        return spec;
    }

    // Run to the end; the exit code.
    int run(const LaunchSpec &spec)
    {
        auto pid = launch::launch(spec);
        EXPECT_TRUE(pid.ok()) << (pid ? "" : pid.error().message());
        if (!pid)
            return -1;
        return exit_code_of(wait_for(*pid, 10000).value_or(-1));
    }

    std::string read(const std::string &name) const
    {
        std::ifstream in(m_dir / name);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    // The file's content once it has `lines` lines (a detached child's).
    std::string read_when(const std::string &name, size_t lines) const
    {
        for (int i = 0; i < 500; ++i) {
            std::string text = read(name);
            if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) >= lines)
                return text;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return read(name);
    }

    fs::path m_dir;
};

// "SigBlk:\t0000000000004002" -> 0x4002
unsigned long long status_mask(const std::string &text, const std::string &key)
{
    const auto at = text.find(key + ":");
    if (at == std::string::npos)
        return ~0ULL;
    return std::strtoull(text.c_str() + at + key.size() + 1, nullptr, 16);
}

unsigned long long bit(int sig) { return 1ULL << (sig - 1); }

}  // namespace

TEST_F(LaunchTest, runs_the_program_and_reports_its_exit_status)
{
    EXPECT_EQ(run(shell("echo hello; exit 3", "out")), 3);
    EXPECT_EQ(read("out"), "hello\n");
}

TEST_F(LaunchTest, a_missing_program_is_an_exec_error_with_its_errno_and_the_child_is_reaped)
{
    LaunchSpec spec;
    spec.argv = {path("nothing-here")};
    auto pid = launch::launch(spec);
    ASSERT_FALSE(pid.ok());
    EXPECT_EQ(pid.error().sys_errno(), ENOENT);
    EXPECT_NE(pid.error().message().find("exec"), std::string::npos) << pid.error().message();
    EXPECT_NE(pid.error().message().find("nothing-here"), std::string::npos) << pid.error().message();
    int status = 0;
    EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);  // no child left behind
    EXPECT_EQ(errno, ECHILD);
}

TEST_F(LaunchTest, a_program_that_is_not_executable_is_eacces)
{
    std::ofstream(path("plain")) << "#!/bin/sh\n";
    LaunchSpec spec;
    spec.argv = {path("plain")};
    auto pid = launch::launch(spec);
    ASSERT_FALSE(pid.ok());
    EXPECT_EQ(pid.error().sys_errno(), EACCES);
}

TEST_F(LaunchTest, refuses_specs_it_cannot_honour)
{
    LaunchSpec spec;
    EXPECT_FALSE(launch::launch(spec).ok());  // no program
    spec.argv = {"sh"};
    EXPECT_FALSE(launch::launch(spec).ok());  // not a path, no search
    spec.argv = {"/bin/true"};
    spec.detach = spec.gated = true;
    EXPECT_FALSE(launch::launch(spec).ok());
    spec.detach = spec.gated = false;
    spec.out = Stdio::from_fd(1);
    EXPECT_FALSE(launch::launch(spec).ok());
    spec.out = Stdio::null();
    spec.signals = Signals::inherit;
    spec.term_blocked = true;
    EXPECT_FALSE(launch::launch(spec).ok());
}

TEST_F(LaunchTest, search_path_finds_the_program_in_path)
{
    LaunchSpec spec = shell("", "out");
    spec.argv = {"sh", "-c", "echo found"};
    spec.search_path = true;
    EXPECT_EQ(run(spec), 0);
    EXPECT_EQ(read("out"), "found\n");
}

TEST_F(LaunchTest, other_descriptors_are_closed_unless_kept)
{
    const int leaked = ::open("/dev/null", O_RDONLY);  // not close-on-exec
    ASSERT_GE(leaked, 3);
    const std::string probe = "[ -e /proc/self/fd/" + std::to_string(leaked) + " ] && echo open || echo closed";
    EXPECT_EQ(run(shell(probe, "closed")), 0);
    LaunchSpec keep = shell(probe, "kept");
    keep.keep_other_fds = true;
    EXPECT_EQ(run(keep), 0);
    ::close(leaked);
    EXPECT_EQ(read("closed"), "closed\n");
    EXPECT_EQ(read("kept"), "open\n");
}

TEST_F(LaunchTest, standard_descriptors_null_inherited_given_or_appended)
{
    // stdin /dev/null by default; stdout and stderr to one given pipe.
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    LaunchSpec spec;
    spec.argv = {"/bin/sh", "-c", "readlink /proc/self/fd/0; echo err >&2"};
    spec.out = spec.err = Stdio::from_fd(p[1]);
    EXPECT_EQ(run(spec), 0);
    ::close(p[1]);
    char buf[256] = {};
    const ssize_t n = ::read(p[0], buf, sizeof buf - 1);
    ::close(p[0]);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "/dev/null\nerr\n");

    // Appending keeps what the file held, and creates it 0600.
    std::ofstream(path("log")) << "before\n";
    EXPECT_EQ(run(shell("echo after", "log")), 0);
    EXPECT_EQ(read("log"), "before\nafter\n");
    EXPECT_EQ(run(shell("echo new", "new-log")), 0);
    struct stat st {};
    ASSERT_EQ(::stat(path("new-log").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    // A file that cannot be opened: the child does not run, the step is named.
    LaunchSpec bad = shell("echo never", "no-such-dir/log");
    auto pid = launch::launch(bad);
    ASSERT_FALSE(pid.ok());
    EXPECT_EQ(pid.error().sys_errno(), ENOENT);
    EXPECT_NE(pid.error().message().find("standard descriptors"), std::string::npos) << pid.error().message();
}

TEST_F(LaunchTest, the_environment_is_the_launchers_or_exactly_the_given_one)
{
    ::setenv("COLMET_LAUNCH_TEST", "inherited", 1);
    EXPECT_EQ(run(shell("echo ${COLMET_LAUNCH_TEST:-unset}", "own")), 0);
    LaunchSpec given = shell("echo ${COLMET_LAUNCH_TEST:-unset} $ONLY", "given");
    given.env = std::vector<std::string>{"ONLY=this"};
    EXPECT_EQ(run(given), 0);
    ::unsetenv("COLMET_LAUNCH_TEST");
    EXPECT_EQ(read("own"), "inherited\n");
    EXPECT_EQ(read("given"), "unset this\n");
}

TEST_F(LaunchTest, signals_are_reset_or_inherited_and_term_can_stay_blocked)
{
    // The launcher ignores SIGHUP, blocks SIGUSR1 and handles SIGUSR2.
    struct sigaction ign {
    }, handler{}, old_hup{}, old_usr2{};
    ign.sa_handler = SIG_IGN;
    handler.sa_handler = [](int) {};
    ::sigaction(SIGHUP, &ign, &old_hup);
    ::sigaction(SIGUSR2, &handler, &old_usr2);
    sigset_t usr1, saved;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    ::pthread_sigmask(SIG_BLOCK, &usr1, &saved);

    // exec keeps the mask and the ignored signals: the shell shows them.
    const std::string probe =
        "exec grep -E '^Sig(Blk|Ign)' /proc/self/status";  // exec: dash clears the mask of what it forks
    EXPECT_EQ(run(shell(probe, "reset")), 0);
    LaunchSpec term = shell(probe, "term");
    term.term_blocked = true;
    EXPECT_EQ(run(term), 0);
    LaunchSpec inherit = shell(probe, "inherit");
    inherit.signals = Signals::inherit;
    EXPECT_EQ(run(inherit), 0);

    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    ::sigaction(SIGUSR2, &old_usr2, nullptr);

    const std::string reset = read("reset"), blocked = read("term"), inherited = read("inherit");
    EXPECT_EQ(status_mask(reset, "SigBlk"), 0u) << reset;
    EXPECT_EQ(status_mask(reset, "SigIgn") & bit(SIGHUP), 0u) << reset;
    EXPECT_EQ(status_mask(blocked, "SigBlk"), bit(SIGTERM) | bit(SIGINT)) << blocked;
    EXPECT_EQ(status_mask(inherited, "SigBlk") & bit(SIGUSR1), bit(SIGUSR1)) << inherited;
    EXPECT_EQ(status_mask(inherited, "SigIgn") & bit(SIGHUP), bit(SIGHUP)) << inherited;
    EXPECT_EQ(status_mask(inherited, "SigIgn") & bit(SIGUSR2), 0u) << inherited;  // a handler is not passed on
}

TEST_F(LaunchTest, session_and_process_group)
{
    // /proc/self/stat: pid (comm) state ppid pgrp session ...
    const std::string probe = "read -r pid comm state ppid pgrp sid rest </proc/self/stat; "
                              "[ \"$pid\" = \"$pgrp\" ] && echo group-leader || echo member; "
                              "[ \"$pid\" = \"$sid\" ] && echo session-leader || echo in-session";
    EXPECT_EQ(run(shell("exec sh -c '" + probe + "'", "same")), 0);
    LaunchSpec group = shell("exec sh -c '" + probe + "'", "group");
    group.session = Session::own_group;
    EXPECT_EQ(run(group), 0);
    LaunchSpec session = shell("exec sh -c '" + probe + "'", "session");
    session.session = Session::own_session;
    EXPECT_EQ(run(session), 0);
    EXPECT_EQ(read("same"), "member\nin-session\n");
    EXPECT_EQ(read("group"), "group-leader\nin-session\n");
    EXPECT_EQ(read("session"), "group-leader\nsession-leader\n");
}

TEST_F(LaunchTest, workdir_and_umask)
{
    LaunchSpec spec = shell("pwd; umask", "out");
    spec.workdir = m_dir.string();
    spec.umask = 027;
    EXPECT_EQ(run(spec), 0);
    EXPECT_EQ(read("out"), m_dir.string() + "\n0027\n");
    spec.workdir = path("missing");
    auto pid = launch::launch(spec);
    ASSERT_FALSE(pid.ok());
    EXPECT_NE(pid.error().message().find("chdir"), std::string::npos) << pid.error().message();
}

TEST_F(LaunchTest, a_detached_program_is_not_our_child_and_its_pid_is_the_programs)
{
    LaunchSpec spec = shell("echo $$; read -r a b c ppid rest </proc/$$/stat; echo $ppid; sleep 0.2", "out");
    spec.detach = true;
    spec.session = Session::own_session;
    auto pid = launch::launch(spec);
    ASSERT_TRUE(pid.ok()) << pid.error().message();
    int status = 0;
    EXPECT_EQ(::waitpid(*pid, &status, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    std::istringstream lines(read_when("out", 2));
    pid_t reported = 0, parent = 0;
    lines >> reported >> parent;
    EXPECT_EQ(reported, *pid);
    EXPECT_NE(parent, ::getpid());
    // Not our child: waiting watches the pid go, and its status is unknown.
    const Exit e = wait_exit(*pid, 10000);
    EXPECT_FALSE(e.timed_out);
    EXPECT_TRUE(e.status_unknown);

    // The program's failure and the middle process's report of its pid
    // race; whichever comes first, the failure is what comes back.
    LaunchSpec missing;
    missing.argv = {path("nothing-here")};
    missing.detach = true;
    for (int i = 0; i < 30; ++i) {
        auto failed = launch::launch(missing);
        ASSERT_FALSE(failed.ok());
        EXPECT_EQ(failed.error().sys_errno(), ENOENT) << failed.error().message();
    }
}

TEST_F(LaunchTest, a_gated_child_runs_only_once_released)
{
    LaunchSpec spec = shell("echo ran", "out");
    spec.gated = true;
    auto child = launch::start(spec);
    ASSERT_TRUE(child.ok()) << child.error().message();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(fs::exists(path("out")));  // waiting at the gate
    EXPECT_TRUE(child->release().ok());
    EXPECT_EQ(exit_code_of(wait_for(child->pid(), 10000).value_or(-1)), 0);
    EXPECT_EQ(read("out"), "ran\n");

    // Cancelled: exit status 70, the program never ran.
    auto cancelled = launch::start(shell("echo ran", "never"));
    LaunchSpec gated = shell("echo ran", "never");
    gated.gated = true;
    auto held = launch::start(gated);
    ASSERT_TRUE(held.ok());
    EXPECT_TRUE(held->release(false).ok());
    EXPECT_EQ(exit_code_of(wait_for(held->pid(), 10000).value_or(-1)), 70);
    ASSERT_TRUE(cancelled.ok());
    EXPECT_TRUE(cancelled->release().ok());  // not gated: ran at once
    EXPECT_EQ(exit_code_of(wait_for(cancelled->pid(), 10000).value_or(-1)), 0);
    EXPECT_EQ(read("never"), "ran\n");  // only the ungated one's line

    // An exec failure after release comes back from release().
    LaunchSpec missing;
    missing.argv = {path("nothing-here")};
    missing.gated = true;
    auto bad = launch::start(missing);
    ASSERT_TRUE(bad.ok());
    auto ran = bad->release();
    ASSERT_FALSE(ran.ok());
    EXPECT_EQ(ran.error().sys_errno(), ENOENT);
    EXPECT_EQ(exit_code_of(wait_for(bad->pid(), 10000).value_or(-1)), 127);
}

TEST_F(LaunchTest, a_user_runs_with_that_users_ids_and_groups)
{
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root: only root can run a program as another user";
    const passwd *nobody = ::getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    Credentials c;
    c.user = "nobody";
    c.uid = nobody->pw_uid;
    c.gid = nobody->pw_gid;
    c.groups = {nobody->pw_gid};
    fs::permissions(m_dir, fs::perms::all);
    LaunchSpec spec = shell("id -u; id -g; id -G; grep ^Uid: /proc/self/status | tr -s '\\t ' ' '", "out");
    spec.user = &c;
    EXPECT_EQ(run(spec), 0);
    const std::string uid = std::to_string(c.uid), gid = std::to_string(c.gid);
    EXPECT_EQ(read("out"), uid + "\n" + gid + "\n" + gid + "\nUid: " + uid + " " + uid + " " + uid + " " + uid + "\n");
}

TEST_F(LaunchTest, waiting_times_out_and_terminate_stops)
{
    LaunchSpec spec;
    spec.argv = {"/bin/sleep", "30"};
    auto pid = launch::launch(spec);
    ASSERT_TRUE(pid.ok());
    const Exit e = wait_exit(*pid, 50);
    EXPECT_TRUE(e.timed_out);
    EXPECT_FALSE(wait_for(*pid, 0).has_value());
    const int status = terminate(*pid, 5000);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(exit_code_of(status), 128 + SIGTERM);
}
