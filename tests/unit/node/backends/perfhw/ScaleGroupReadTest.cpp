// scale_group_read() and the totals it fills, on synthetic PERF_FORMAT_GROUP
// buffers {nr, time_enabled, time_running, value[nr]}.
#include "node/backends/perfhw/PerfGroup.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace colmet::node::backends::perfhw;
using namespace colmet::perf;

namespace {

std::vector<EventTotals> totals(size_t n) { return std::vector<EventTotals>(n); }

}  // namespace

TEST(ScaleGroupReadTest, enabled_equals_running_is_not_scaled)
{
    const uint64_t buf[] = {2, 1000, 1000, 500, 7};
    const uint32_t slots[] = {0, 1};
    auto t = totals(2);
    ASSERT_TRUE(scale_group_read(buf, 2, slots, t));
    EXPECT_EQ(t[0].raw, 500u);
    EXPECT_DOUBLE_EQ(estimate(t[0]), 500.0);
    EXPECT_DOUBLE_EQ(estimate(t[1]), 7.0);
    EXPECT_DOUBLE_EQ(running_ratio(t[0]), 1.0);
}

TEST(ScaleGroupReadTest, multiplexed_group_is_scaled_up)
{
    // Ran a quarter of the time it was enabled: counts x4.
    const uint64_t buf[] = {2, 4000, 1000, 250, 100};
    const uint32_t slots[] = {1, 0};  // the members map to events 1 and 0
    auto t = totals(2);
    ASSERT_TRUE(scale_group_read(buf, 2, slots, t));
    EXPECT_DOUBLE_EQ(estimate(t[1]), 1000.0);
    EXPECT_DOUBLE_EQ(estimate(t[0]), 400.0);
    EXPECT_EQ(t[1].raw, 250u);
    EXPECT_DOUBLE_EQ(running_ratio(t[1]), 0.25);
}

TEST(ScaleGroupReadTest, never_running_group_has_no_value)
{
    const uint64_t buf[] = {1, 5000, 0, 0};
    const uint32_t slots[] = {0};
    auto t = totals(1);
    ASSERT_TRUE(scale_group_read(buf, 1, slots, t));
    EXPECT_TRUE(not_scheduled(t[0]));
    EXPECT_TRUE(std::isnan(estimate(t[0])));
    EXPECT_DOUBLE_EQ(running_ratio(t[0]), 0.0);
}

TEST(ScaleGroupReadTest, never_enabled_group_counts_zero)
{
    // In cgroup mode time only passes while the cgroup runs on that CPU.
    const uint64_t buf[] = {1, 0, 0, 0};
    const uint32_t slots[] = {0};
    auto t = totals(1);
    ASSERT_TRUE(scale_group_read(buf, 1, slots, t));
    EXPECT_FALSE(not_scheduled(t[0]));
    EXPECT_DOUBLE_EQ(estimate(t[0]), 0.0);
    EXPECT_DOUBLE_EQ(running_ratio(t[0]), 1.0);
}

TEST(ScaleGroupReadTest, sums_cpus_each_scaled_by_its_own_times)
{
    const uint64_t cpu0[] = {1, 1000, 1000, 300};  // not multiplexed
    const uint64_t cpu1[] = {1, 1000, 500, 100};   // half the time: 200
    const uint32_t slots[] = {0};
    auto t = totals(1);
    ASSERT_TRUE(scale_group_read(cpu0, 1, slots, t));
    ASSERT_TRUE(scale_group_read(cpu1, 1, slots, t));
    EXPECT_EQ(t[0].raw, 400u);
    EXPECT_DOUBLE_EQ(estimate(t[0]), 500.0);
    EXPECT_DOUBLE_EQ(running_ratio(t[0]), 0.75);
}

TEST(ScaleGroupReadTest, cpu_that_never_ran_is_extrapolated_from_the_others)
{
    const uint64_t cpu0[] = {1, 1000, 1000, 300};
    const uint64_t cpu1[] = {1, 1000, 0, 0};  // enabled, never scheduled
    const uint32_t slots[] = {0};
    auto t = totals(1);
    ASSERT_TRUE(scale_group_read(cpu0, 1, slots, t));
    ASSERT_TRUE(scale_group_read(cpu1, 1, slots, t));
    EXPECT_FALSE(not_scheduled(t[0]));
    EXPECT_DOUBLE_EQ(estimate(t[0]), 600.0);
    EXPECT_DOUBLE_EQ(running_ratio(t[0]), 0.5);
}

TEST(ScaleGroupReadTest, rejects_a_buffer_of_another_size_or_bad_slots)
{
    const uint64_t buf[] = {3, 1000, 1000, 1, 2, 3};
    const uint32_t slots[] = {0, 1, 2};
    auto t = totals(3);
    EXPECT_FALSE(scale_group_read(buf, 2, slots, t));  // nr says 3
    const uint32_t bad[] = {0, 1, 5};
    EXPECT_FALSE(scale_group_read(buf, 3, bad, t));
    EXPECT_EQ(t[0].raw, 0u);  // nothing added
    EXPECT_FALSE(scale_group_read(nullptr, 3, slots, t));
    EXPECT_TRUE(scale_group_read(buf, 3, slots, t));
    EXPECT_EQ(t[2].raw, 3u);
}
