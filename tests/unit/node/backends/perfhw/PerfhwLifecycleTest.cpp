// Closing, releasing and reopening perf counters on real cgroups (root only).
#include "RealJob.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "common/file_io.hpp"
#include "node/backends/perfhw/PerfhwBackend.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/perf_event.h>

#include <cmath>

using namespace colmet;
using namespace colmet::node::backends::perfhw;
using namespace colmet::perf;
using colmet::test::RealJob;
namespace fs = std::filesystem;

namespace {

// task_clock in seconds read straight from a PerfGroup.
double read_task_clock(PerfGroup &group)
{
    std::vector<EventTotals> totals(group.event_count());
    int err = 0;
    if (group.read(totals, &err) != 0)
        return NAN;
    return estimate(totals[0]) * 1e-9;
}

}  // namespace

TEST(PerfhwLifecycleTest, close_leaves_no_perf_fd_and_a_recreated_cgroup_starts_from_zero)
{
    SKIP_UNLESS_LIVE();
    ASSERT_EQ(test::count_perf_fds(), 0u) << "perf fds left by an earlier test";
    fs::path perf_dir;
    {
        RealJob job("reuse");
        ASSERT_TRUE(job.create());
        ASSERT_TRUE(job.spawn_burner(300));
        auto made = make_perfhw_backend(job.context(), {test::task_clock()}, test::k_cgroup_root, "/sys");
        ASSERT_TRUE(made) << made.error().message();
        auto &b = test::as_perfhw(**made);
        perf_dir = b.perf_dir();
        EXPECT_EQ(perf_dir, test::k_cgroup_root / "perf_event" / job.name());
        EXPECT_EQ(test::count_perf_fds(), b.cpus().size());
        job.go();
        ASSERT_FALSE(std::isnan(job.wait_report(30000)));
        auto v = test::sample(b);
        EXPECT_GT(test::value(b, v, "task_clock"), 0.25);

        b.release();
        EXPECT_EQ(test::count_perf_fds(), 0u) << "release() closes every perf fd";
        made->reset();
        EXPECT_EQ(test::count_perf_fds(), 0u);

        // The job's cgroups, perf_event included, can now be removed.
        auto removed = cgroup::CgroupFs::remove(job.paths());
        ASSERT_TRUE(removed) << removed.error().message();
        auto perf_removed = cgroup::remove_job_perf_cgroup(test::k_cgroup_root / "perf_event", job.paths().relative);
        ASSERT_TRUE(perf_removed) << perf_removed.error().message();
        EXPECT_FALSE(fs::exists(perf_dir));
        EXPECT_FALSE(fs::exists(job.paths().dir_for("cpuacct")));
    }

    RealJob again("reuse");  // same path
    ASSERT_TRUE(again.create());
    ASSERT_TRUE(again.spawn_burner(300));  // never told to go: idle
    auto made = make_perfhw_backend(again.context(), {test::task_clock()}, test::k_cgroup_root, "/sys");
    ASSERT_TRUE(made) << made.error().message();
    auto &b = test::as_perfhw(**made);
    EXPECT_EQ(b.perf_dir(), perf_dir);
    auto v = test::sample(b);
    EXPECT_LT(test::value(b, v, "task_clock"), 0.02) << "a new cgroup of the same path starts near zero";
    EXPECT_EQ(b.status(), "");
}

TEST(PerfhwLifecycleTest, perf_group_reopened_on_the_same_cgroup_starts_from_zero)
{
    SKIP_UNLESS_LIVE();
    RealJob job("group");
    ASSERT_TRUE(job.create());
    ASSERT_TRUE(job.spawn_burner(300));
    auto made = make_perfhw_backend(job.context(), {test::task_clock()}, test::k_cgroup_root, "/sys");
    ASSERT_TRUE(made) << made.error().message();
    auto &b = test::as_perfhw(**made);

    UniqueFd dir(::open(b.perf_dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir.valid());
    std::vector<PerfEventSpec> events = {test::task_clock()};
    auto group = PerfGroup::open(events, dir.get(), b.cpus());
    ASSERT_TRUE(group) << group.error().message();
    job.go();
    ASSERT_FALSE(std::isnan(job.wait_report(30000)));
    EXPECT_GT(read_task_clock(*group), 0.25);

    group->close();
    EXPECT_EQ(group->fd_count(), 0u);
    auto reopened = PerfGroup::open(events, dir.get(), b.cpus());
    ASSERT_TRUE(reopened) << reopened.error().message();
    EXPECT_LT(read_task_clock(*reopened), 0.02) << "the burner is idle now";
}

TEST(PerfhwLifecycleTest, release_and_reopen_keep_the_count_since_the_start)
{
    SKIP_UNLESS_LIVE();
    RealJob job("pause");
    ASSERT_TRUE(job.create());
    ASSERT_TRUE(job.spawn_burner(300));
    auto made = make_perfhw_backend(
        job.context(), {test::task_clock(), test::software_event("context_switches", PERF_COUNT_SW_CONTEXT_SWITCHES)},
        test::k_cgroup_root, "/sys");
    ASSERT_TRUE(made) << made.error().message();
    auto &b = test::as_perfhw(**made);
    job.go();
    ASSERT_FALSE(std::isnan(job.wait_report(30000)));
    auto first = test::sample(b);
    double counted = test::value(b, first, "task_clock");
    EXPECT_GT(counted, 0.25);

    b.release();
    EXPECT_TRUE(b.released());
    auto paused = test::sample(b);
    EXPECT_TRUE(std::isnan(test::value(b, paused, "task_clock")));
    EXPECT_EQ(b.status(), "counters released");

    auto r = b.reopen();
    ASSERT_TRUE(r) << r.error().message();
    auto resumed = test::sample(b);
    EXPECT_EQ(b.status(), "");
    EXPECT_GE(test::value(b, resumed, "task_clock"), counted);
    EXPECT_LT(test::value(b, resumed, "task_clock"), counted + 0.02);
    EXPECT_GE(test::value(b, resumed, "context_switches"), test::value(b, first, "context_switches"));
}

TEST(PerfhwLifecycleTest, the_jobs_running_processes_are_moved_into_its_perf_event_directory_once)
{
    SKIP_UNLESS_LIVE();
    RealJob job("move");
    ASSERT_TRUE(job.create());
    auto burner = job.spawn_burner(10);
    ASSERT_TRUE(burner) << burner.error().message();
    auto perf_root = cgroup::ensure_perf_event_hierarchy(test::k_cgroup_root);
    ASSERT_TRUE(perf_root) << perf_root.error().message();
    auto perf_dir = cgroup::ensure_job_perf_cgroup(*perf_root, "/" + job.name());
    ASSERT_TRUE(perf_dir) << perf_dir.error().message();
    // The burner is in the job's other hierarchies, not (or no longer) in its perf_event directory.
    const pid_t pids[] = {*burner};
    ASSERT_TRUE(cgroup::move_procs_into(*perf_root, pids));
    auto moved = move_job_procs(job.paths(), *perf_dir);
    ASSERT_TRUE(moved) << moved.error().message();
    EXPECT_EQ(*moved, 1u);
    auto there = read_file(*perf_dir / "cgroup.procs");
    ASSERT_TRUE(there);
    EXPECT_NE(there->find(std::to_string(*burner)), std::string::npos) << *there;
    auto again = move_job_procs(job.paths(), *perf_dir);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, 0u) << "nothing left to move";
}
