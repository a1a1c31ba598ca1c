#include "SpecCheck.hpp"

#include <gtest/gtest.h>

using namespace colmet::spank;

TEST(SpecCheckTest, bare_option_in_every_form_means_defaults)
{
    for (const char *v : {static_cast<const char *>(nullptr), "", "(null)", "true"}) {
        auto c = interpret_option(v);
        EXPECT_EQ(c.request, Request::defaults) << (v ? v : "NULL");
    }
}

TEST(SpecCheckTest, off_and_spec)
{
    EXPECT_EQ(interpret_option("off").request, Request::off);
    auto c = interpret_option("perfhw:instructions,cache_misses");
    EXPECT_EQ(c.request, Request::spec);
    EXPECT_EQ(c.spec, "perfhw:instructions,cache_misses");
}

TEST(SpecCheckTest, valid_specs)
{
    for (const char *s : {"perfhw", "perfhw:instructions,cache_misses", "period=2", "period:2,perfhw", "", "true",
                          "off", "rapl,temperature"})
        EXPECT_FALSE(spec_error(s).has_value()) << s << ": " << spec_error(s).value_or("");
}

TEST(SpecCheckTest, invalid_specs_say_why)
{
    auto e = spec_error("perfhw,bogus");
    ASSERT_TRUE(e.has_value());
    EXPECT_NE(e->find("unknown spec item 'bogus'"), std::string::npos) << *e;
    e = spec_error("period=0");
    ASSERT_TRUE(e.has_value());
    EXPECT_NE(e->find("out of range"), std::string::npos) << *e;
}

TEST(SpecCheckTest, effective_spec_prefers_the_user)
{
    EXPECT_EQ(effective_spec({Request::spec, "period=2"}, "perfhw"), "period=2");
    EXPECT_EQ(effective_spec({Request::defaults, ""}, "perfhw"), "perfhw");
}
