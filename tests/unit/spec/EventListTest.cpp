// spec::split_event_list(): "--perfhw-list" arguments with commas and/or blanks.
#include "spec/event_list.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::spec;

using Names = std::vector<std::string>;

TEST(SplitEventListTest, splits_on_commas_and_blanks_across_arguments)
{
    auto r = split_event_list({"cpu_cycles,instructions task_clock", "  cache_ll ,, ,\temulation_faults\n", ""});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, (Names{"cpu_cycles", "instructions", "task_clock", "cache_ll", "emulation_faults"}));
}

TEST(SplitEventListTest, nothing_given_is_an_empty_list)
{
    auto r = split_event_list({});
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->empty());
    auto blanks = split_event_list({" , ,", ""});
    ASSERT_TRUE(blanks);
    EXPECT_TRUE(blanks->empty());
}

TEST(SplitEventListTest, keeps_commas_inside_a_pmu_event)
{
    auto r = split_event_list({"cpu/event=0x3c,umask=0x00/,instructions msr/tsc/", "power/energy-pkg/"});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, (Names{"cpu/event=0x3c,umask=0x00/", "instructions", "msr/tsc/", "power/energy-pkg/"}));
}

TEST(SplitEventListTest, unterminated_pmu_event_is_an_error)
{
    auto r = split_event_list({"cpu/event=0x3c,umask=0x00"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    EXPECT_NE(r.error().message().find("has no closing '/'"), std::string::npos) << r.error().message();
}

TEST(SplitEventListTest, duplicate_is_an_error_even_across_arguments)
{
    auto r = split_event_list({"instructions,cpu_cycles", "instructions"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    EXPECT_EQ(r.error().message(), "event 'instructions' listed twice");
}

TEST(SplitEventListTest, at_most_64_events)
{
    std::string many;
    for (int i = 0; i < 64; ++i)
        many += "e" + std::to_string(i) + ",";
    auto full = split_event_list({many});
    ASSERT_TRUE(full);
    EXPECT_EQ(full->size(), k_max_events);
    auto over = split_event_list({many, "e64"});
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().code(), Errc::invalid);
    EXPECT_NE(over.error().message().find("at most 64"), std::string::npos);
}

TEST(SplitEventListTest, splitting_does_not_resolve_names)
{
    // Unknown names are resolve_event()'s business, so the caller can report all at once.
    auto r = split_event_list({"no_such_event"});
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, Names{"no_such_event"});
}
