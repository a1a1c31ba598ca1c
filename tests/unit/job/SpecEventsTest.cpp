// check_spec_events(): a spec's perf events resolved on this node.
#include "job/SpecEvents.hpp"

#include <gtest/gtest.h>

using colmet::spec::parse_spec;

TEST(SpecEvents, EventsCheckedAgainstTheNode)
{
    auto good = parse_spec("perfhw:task_clock,page_faults");
    ASSERT_TRUE(good);
    EXPECT_TRUE(colmet::job::check_spec_events(*good, "/sys"));
    auto bad = parse_spec("perfhw:task_clock,no_such_event");
    ASSERT_TRUE(bad);
    auto r = colmet::job::check_spec_events(*bad, "/sys");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("no_such_event"), std::string::npos) << r.error().message();
}
