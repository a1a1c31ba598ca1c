#include "BackendTestSupport.hpp"
#include "node/backends/cgroup_cpu/cpu_parsers.hpp"
#include "node/backends/support/flat_keyed.hpp"

#include <gtest/gtest.h>

#include <array>

using namespace colmet;
using namespace colmet::node::backends;

TEST(FlatKeyedTest, picks_listed_keys_and_ignores_others)
{
    constexpr std::array<std::string_view, 2> keys = {"a", "b"};
    std::array<std::optional<uint64_t>, 2> v;
    ASSERT_TRUE(parse_flat_keyed("x 1\nb 20\na 10\nweird line with words\n", keys, v));
    EXPECT_EQ(v[0], 10u);
    EXPECT_EQ(v[1], 20u);
}

TEST(FlatKeyedTest, accepts_colon_after_key_and_blank_runs)
{
    constexpr std::array<std::string_view, 1> keys = {"rchar"};
    std::array<std::optional<uint64_t>, 1> v;
    ASSERT_TRUE(parse_flat_keyed("rchar:    6976", keys, v));
    EXPECT_EQ(v[0], 6976u);
}

TEST(FlatKeyedTest, rejects_a_listed_key_without_a_number)
{
    constexpr std::array<std::string_view, 1> keys = {"a"};
    std::array<std::optional<uint64_t>, 1> v;
    auto r = parse_flat_keyed("a x12\n", keys, v);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::parse);
    EXPECT_NE(r.error().message().find('a'), std::string::npos);
    EXPECT_FALSE(parse_flat_keyed("a\n", keys, v));
    EXPECT_FALSE(parse_flat_keyed("a -1\n", keys, v));
    EXPECT_FALSE(parse_flat_keyed("a 1 2\n", keys, v));
}

TEST(CpuacctStatTest, parses_ticks)
{
    auto st = parse_cpuacct_stat("user 210\nsystem 45\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->user_ticks, 210u);
    EXPECT_EQ(st->system_ticks, 45u);
}

TEST(CpuacctStatTest, parses_the_file_of_this_machine)
{
    auto st = parse_cpuacct_stat(test::fixture_text("backends/text/v1_cpuacct.stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->user_ticks, 10115u);
    EXPECT_EQ(st->system_ticks, 7080u);
}

TEST(CpuacctStatTest, missing_keys_and_empty_input_stay_unset)
{
    auto st = parse_cpuacct_stat("user 3\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->user_ticks, 3u);
    EXPECT_FALSE(st->system_ticks);
    auto empty = parse_cpuacct_stat("");
    ASSERT_TRUE(empty);
    EXPECT_FALSE(empty->user_ticks);
}

TEST(CpuacctStatTest, rejects_non_numbers)
{
    auto st = parse_cpuacct_stat("user lots\nsystem 1\n");
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code(), Errc::parse);
    EXPECT_NE(st.error().message().find("user"), std::string::npos);
}

TEST(V1CpuStatTest, parses_the_file_of_this_machine_ignoring_burst_keys)
{
    auto st = parse_v1_cpu_stat(test::fixture_text("backends/text/v1_cpu.stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->nr_periods, 0u);
    EXPECT_EQ(st->nr_throttled, 0u);
    EXPECT_EQ(st->throttled_time_ns, 0u);
}

TEST(V1CpuStatTest, parses_values_and_reports_missing_keys)
{
    auto st = parse_v1_cpu_stat("nr_periods 100\nthrottled_time 1500000000\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->nr_periods, 100u);
    EXPECT_FALSE(st->nr_throttled);
    EXPECT_EQ(st->throttled_time_ns, 1500000000u);
    EXPECT_FALSE(parse_v1_cpu_stat("nr_throttled 1.5\n"));
}

TEST(V2CpuStatTest, parses_all_keys_and_ignores_new_ones)
{
    auto st = parse_v2_cpu_stat(test::fixture_text("backends/text/v2_cpu.stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->usage_usec, 2000000u);
    EXPECT_EQ(st->user_usec, 1500000u);
    EXPECT_EQ(st->system_usec, 500000u);
    EXPECT_EQ(st->nr_periods, 10u);
    EXPECT_EQ(st->nr_throttled, 2u);
    EXPECT_EQ(st->throttled_usec, 3000u);
}

TEST(V2CpuStatTest, without_the_cpu_controller_has_no_throttling_keys)
{
    auto st = parse_v2_cpu_stat(test::fixture_text("backends/text/v2_cpu.stat_root"));
    ASSERT_TRUE(st);
    EXPECT_TRUE(st->usage_usec);
    EXPECT_TRUE(st->user_usec);
    EXPECT_TRUE(st->system_usec);
    EXPECT_FALSE(st->nr_periods);
    EXPECT_FALSE(st->throttled_usec);
}

TEST(V2CpuStatTest, malformed_input)
{
    EXPECT_FALSE(parse_v2_cpu_stat("usage_usec max\n"));
    EXPECT_FALSE(parse_v2_cpu_stat("usage_usec\n"));
    auto garbage = parse_v2_cpu_stat("\n\n  \nnot a stat file\n");
    ASSERT_TRUE(garbage);
    EXPECT_FALSE(garbage->usage_usec);
}
