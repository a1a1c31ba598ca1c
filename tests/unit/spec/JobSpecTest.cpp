#include "spec/JobSpec.hpp"

#include <gtest/gtest.h>

using colmet::spec::format_spec;
using colmet::spec::JobSpec;
using colmet::spec::parse_spec;
using colmet::spec::spec_node_args;

TEST(JobSpec, EmptyAndTrueMeanDefaults)
{
    for (const char *text : {"", "true", "  "}) {
        auto s = parse_spec(text);
        ASSERT_TRUE(s) << text;
        EXPECT_EQ(*s, JobSpec{}) << text;
        EXPECT_TRUE(spec_node_args(*s).empty());
    }
}

TEST(JobSpec, EventListContinuesAfterPerfhw)
{
    auto s = parse_spec("perfhw:instructions,cache_misses,period=2,rapl");
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_TRUE(s->perfhw);
    EXPECT_EQ(s->events, (std::vector<std::string>{"instructions", "cache_misses"}));
    ASSERT_TRUE(s->period_s);
    EXPECT_DOUBLE_EQ(*s->period_s, 2);
    EXPECT_EQ(s->node_backends, std::vector<std::string>{"rapl"});
    EXPECT_EQ(spec_node_args(*s), (std::vector<std::string>{"--enable-perfhw", "--perfhw-list",
                                                            "instructions,cache_misses", "--enable-RAPL"}));
    EXPECT_EQ(format_spec(*s), "period=2,perfhw:instructions,cache_misses,rapl");
}

TEST(JobSpec, ColonFormsAndLibpfmNames)
{
    // OAR's admission rule allows [\w,:] only: period:2, and event names
    // with colons (libpfm4) stay event names.
    auto s = parse_spec("period:0.5;perfhw:INST_RETIRED:ANY_P,task_clock");
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_DOUBLE_EQ(*s->period_s, 0.5);
    EXPECT_EQ(s->events, (std::vector<std::string>{"INST_RETIRED:ANY_P", "task_clock"}));
    auto bare = parse_spec("perfhw");
    ASSERT_TRUE(bare);
    EXPECT_TRUE(bare->perfhw);
    EXPECT_TRUE(bare->events.empty());
    EXPECT_EQ(spec_node_args(*bare), std::vector<std::string>{"--enable-perfhw"});
    EXPECT_EQ(format_spec(*bare), "perfhw");
}

TEST(JobSpec, ErrorsNameTheItem)
{
    struct Case {
        const char *text;
        const char *message_part;
    } cases[] = {
        {"period=0.01", "period 0.01 is out of range"},
        {"period=7200", "out of range"},
        {"period=abc", "'abc' is not a number"},
        {"period", "needs a value"},
        {"perfhw:", "names no event"},
        {"cache_misses", "unknown spec item 'cache_misses'"},
        {"perfhw:a,a", "'a' is given twice"},
        {"perfhw:a b", "spaces or control characters"},
        {"bogus=1", "unknown spec item 'bogus=1'"},
    };
    for (const auto &c : cases) {
        auto s = parse_spec(c.text);
        ASSERT_FALSE(s) << c.text;
        EXPECT_NE(s.error().message().find(c.message_part), std::string::npos) << c.text << ": " << s.error().message();
    }
    EXPECT_FALSE(parse_spec(std::string(5000, 'a')));
}
