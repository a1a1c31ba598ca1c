#include "node/backends/processes/ProcessTracker.hpp"

#include <gtest/gtest.h>

using namespace colmet::node::backends;

namespace {

ProcObservation proc(pid_t pid, pid_t ppid, uint64_t start, uint64_t rchar, uint64_t threads = 1)
{
    ProcObservation p;
    p.pid = pid;
    p.ppid = ppid;
    p.starttime = start;
    p.threads = threads;
    p.io_read = true;
    p.io = ProcIo{rchar, rchar * 2, 1, 1, 0, 0, 0};
    return p;
}

void run(ProcessTracker &t, std::initializer_list<ProcObservation> live)
{
    t.begin();
    for (const auto &p : live)
        t.observe(p);
    t.end();
}

}  // namespace

TEST(ProcessTrackerTest, sums_live_processes)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 5, 2), proc(11, 1, 101, 7, 3)});
    EXPECT_EQ(t.processes(), 2u);
    EXPECT_EQ(t.threads(), 5u);
    EXPECT_TRUE(t.io_complete());
    EXPECT_EQ(t.io_totals()[k_rchar], 12u);
    EXPECT_EQ(t.io_totals()[k_wchar], 24u);
}

TEST(ProcessTrackerTest, keeps_io_of_a_process_whose_parent_is_outside_the_job)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 5), proc(11, 1, 101, 7)});
    run(t, {proc(10, 1, 100, 6)});
    EXPECT_EQ(t.processes(), 1u);
    EXPECT_EQ(t.exited()[k_rchar], 7u);
    EXPECT_EQ(t.io_totals()[k_rchar], 13u);
}

TEST(ProcessTrackerTest, does_not_double_count_a_child_reaped_by_a_parent_in_the_job)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 5), proc(20, 10, 200, 40)});
    EXPECT_EQ(t.io_totals()[k_rchar], 45u);
    // The child exited, the parent has not reaped it yet: no dip below 45.
    run(t, {proc(10, 1, 100, 6)});
    EXPECT_EQ(t.exited()[k_rchar], 0u);
    EXPECT_EQ(t.io_totals()[k_rchar], 45u);
    // The parent reaped it: its counters now include the child's 40.
    run(t, {proc(10, 1, 100, 46)});
    EXPECT_EQ(t.io_totals()[k_rchar], 46u);
}

TEST(ProcessTrackerTest, reused_pid_is_a_new_process)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 5), proc(11, 1, 101, 7)});
    run(t, {proc(10, 1, 100, 5), proc(11, 1, 999, 2)});  // 11 exited; a new 11 started
    EXPECT_EQ(t.processes(), 2u);
    EXPECT_EQ(t.exited()[k_rchar], 7u);
    EXPECT_EQ(t.io_totals()[k_rchar], 14u);
}

TEST(ProcessTrackerTest, totals_are_monotonic)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 50)});
    run(t, {proc(10, 1, 100, 30)});  // cannot happen for one process, but totals never go back
    EXPECT_EQ(t.io_totals()[k_rchar], 50u);
    run(t, {});
    EXPECT_EQ(t.processes(), 0u);
    EXPECT_EQ(t.io_totals()[k_rchar], 50u);
}

TEST(ProcessTrackerTest, unreadable_io_keeps_last_values_and_marks_incomplete)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 5)});
    auto hidden = proc(10, 1, 100, 0);
    hidden.io_read = false;
    run(t, {hidden});
    EXPECT_FALSE(t.io_complete());
    EXPECT_EQ(t.io_totals()[k_rchar], 5u);
    // It exits while unreadable: its last known values are kept.
    run(t, {});
    EXPECT_TRUE(t.io_complete());
    EXPECT_EQ(t.io_totals()[k_rchar], 5u);
    EXPECT_EQ(t.exited()[k_rchar], 5u);
}

TEST(ProcessTrackerTest, parent_and_child_gone_together_both_count)
{
    ProcessTracker t;
    run(t, {proc(10, 1, 100, 5), proc(20, 10, 200, 40)});
    run(t, {});
    EXPECT_EQ(t.exited()[k_rchar], 45u);
}
