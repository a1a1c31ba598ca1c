// Backends on real cgroup v1 directories: root only. Creates
// colmet-test-<pid> under this process's own cgroup in each v1 hierarchy
// (plain mkdir), moves a forked child that burns CPU and writes a file into
// it, samples, then kills the child and removes the directories.
#include "BackendTestSupport.hpp"
#include "common/text.hpp"
#include "node/backends/registry.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

using namespace colmet;
using colmet::test::value;

namespace {

const std::filesystem::path k_cgroup_root = "/sys/fs/cgroup";

// This process's cgroup in the v1 hierarchy of `controller`, from /proc/self/cgroup.
std::string own_cgroup(std::string_view controller)
{
    auto text = read_file("/proc/self/cgroup");
    if (!text)
        return {};
    for (std::string_view line : text::Lines(*text)) {
        auto first = line.find(':');
        auto second = line.find(':', first + 1);
        if (first == std::string_view::npos || second == std::string_view::npos)
            continue;
        std::string_view list = line.substr(first + 1, second - first - 1);
        for (size_t pos = 0; pos <= list.size();) {
            size_t comma = std::min(list.find(',', pos), list.size());
            if (list.substr(pos, comma - pos) == controller)
                return std::string(line.substr(second + 1));
            pos = comma + 1;
        }
    }
    return {};
}

// Owns the test cgroups and the child: kills and reaps the child, then
// removes the directories, whatever the test's outcome.
class Cleanup {
public:
    ~Cleanup()
    {
        if (child > 0) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
        }
        for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
            for (int attempt = 0; attempt < 50 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++attempt)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_t child = -1;
    std::vector<std::filesystem::path> dirs;
};

[[noreturn]] void child_main(int go_fd, int done_fd, const char *file)
{
    char c;
    if (::read(go_fd, &c, 1) != 1)
        ::_exit(1);
    timespec ts{};
    do {  // burn ~0.35 s of CPU inside the cgroup
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    } while (ts.tv_sec == 0 && ts.tv_nsec < 350'000'000);
    int fd = ::open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    static char block[65536];
    for (int i = 0; fd >= 0 && i < 16; ++i)
        if (::write(fd, block, sizeof block) != static_cast<ssize_t>(sizeof block))
            ::_exit(2);
    ::close(fd);
    if (::write(done_fd, "d", 1) != 1)
        ::_exit(3);
    for (;;)
        ::pause();
}

}  // namespace

TEST(RealCgroupTest, backends_read_a_live_v1_job)
{
    if (!test::is_root())
        GTEST_SKIP() << "needs root to create cgroups";
    if (!std::filesystem::exists(k_cgroup_root / "cpuacct" / "cpuacct.usage"))
        GTEST_SKIP() << "no cgroup v1 cpuacct hierarchy at " << k_cgroup_root;

    Cleanup cleanup;
    cgroup::CgroupPaths paths;
    paths.version = cgroup::Version::v1;
    std::string name = "colmet-test-" + std::to_string(::getpid());
    for (const char *controller : {"cpuacct", "cpu", "memory", "pids", "blkio"}) {
        auto parent = k_cgroup_root / controller;
        if (!std::filesystem::exists(parent / "cgroup.procs"))
            continue;
        auto dir = parent / own_cgroup(controller).substr(1) / name;
        ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
        cleanup.dirs.push_back(dir);
        paths.controllers.emplace_back(controller, dir);
    }

    test::FakeTree tree;
    auto file = tree.path("written");
    int go[2];
    int done[2];
    ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(done, O_CLOEXEC), 0);
    UniqueFd go_r(go[0]), go_w(go[1]), done_r(done[0]), done_w(done[1]);
    cleanup.child = ::fork();
    ASSERT_GE(cleanup.child, 0);
    if (cleanup.child == 0)
        child_main(go[0], done[1], file.c_str());

    for (const auto &entry : paths.controllers) {
        auto moved = write_file(entry.second / "cgroup.procs", std::to_string(cleanup.child));
        ASSERT_TRUE(moved) << moved.error().message();
    }
    ASSERT_EQ(::write(go_w.get(), "g", 1), 1);
    pollfd pfd{done_r.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&pfd, 1, 20000), 1) << "the child did not finish its work";

    auto ctx = test::context(paths);
    for (const auto &factory : node::job_backends()) {
        auto backend = factory.make_for_job(ctx);
        ASSERT_TRUE(backend) << factory.name << ": " << backend.error().message();
        auto &b = **backend;
        auto v = test::sample(b);
        EXPECT_EQ(b.status(), "") << factory.name;
        if (factory.name == "cgroup_cpu") {
            EXPECT_GE(value(b, v, "usage"), 0.25);
            EXPECT_GE(value(b, v, "user") + value(b, v, "system"), 0.2);
            EXPECT_FALSE(std::isnan(value(b, v, "nr_periods")));
        } else if (factory.name == "cgroup_memory") {
            EXPECT_GT(value(b, v, "current"), 0);
            EXPECT_GE(value(b, v, "peak"), value(b, v, "current"));
            EXPECT_FALSE(std::isnan(value(b, v, "anon")));
        } else if (factory.name == "cgroup_io") {
            EXPECT_GE(value(b, v, "write_bytes"), 0);
        } else if (factory.name == "processes") {
            EXPECT_EQ(value(b, v, "processes"), 1);
            EXPECT_EQ(value(b, v, "threads"), 1);
            EXPECT_GE(value(b, v, "write_chars"), 16 * 65536);
            EXPECT_GE(value(b, v, "write_syscalls"), 16);
        }
    }
}

TEST(RealCgroupTest, removed_cgroup_gives_nan_and_a_status)
{
    if (!test::is_root())
        GTEST_SKIP() << "needs root to create cgroups";
    if (!std::filesystem::exists(k_cgroup_root / "cpuacct" / "cpuacct.usage"))
        GTEST_SKIP() << "no cgroup v1 cpuacct hierarchy at " << k_cgroup_root;
    Cleanup cleanup;
    auto dir =
        k_cgroup_root / "cpuacct" / own_cgroup("cpuacct").substr(1) / ("colmet-test-rm-" + std::to_string(::getpid()));
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
    cleanup.dirs.push_back(dir);
    cgroup::CgroupPaths paths;
    paths.version = cgroup::Version::v1;
    paths.controllers.emplace_back("cpuacct", dir);
    auto backend = node::job_backends()[0].make_for_job(test::context(paths));
    ASSERT_TRUE(backend) << backend.error().message();
    ASSERT_EQ(::rmdir(dir.c_str()), 0);
    auto v = test::sample(**backend);
    EXPECT_TRUE(std::isnan(value(**backend, v, "usage")));
    EXPECT_NE((*backend)->status().find("cpuacct.usage: "), std::string_view::npos) << (*backend)->status();
}
