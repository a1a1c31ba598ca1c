#include "common/config_section.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

using namespace colmet;

namespace {

struct Parsed {
    double period = 5;
    int hwm = 1000;
    std::string uri = "default";
};

// Parse argv with the options of a small program reading section [node].
std::string parse(const std::vector<std::string> &args, Parsed &p)
{
    CLI::App app{"test"};
    use_config_section(app, "node", "/nonexistent/colmet.conf");
    app.add_option("--sample-period", p.period);
    app.add_option("--zeromq-hwm", p.hwm);
    app.add_option("--zeromq-uri", p.uri);
    std::vector<std::string> rev(args.rbegin(), args.rend());
    try {
        app.parse(rev);
    } catch (const CLI::ParseError &e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST(ConfigSection, every_key_of_the_programs_section_applies_and_others_are_ignored)
{
    test::FakeTree t;
    t.write("c.conf", "[collector]\nhdf5-dir = /x\n\n[node]\nsample-period = 2\nzeromq-hwm = 7\n"
                      "zeromq-uri = \"tcp://h:1\"\n");
    Parsed p;
    EXPECT_EQ(parse({"--config", t.path("c.conf").string()}, p), "");
    EXPECT_DOUBLE_EQ(p.period, 2);
    EXPECT_EQ(p.hwm, 7);
    EXPECT_EQ(p.uri, "tcp://h:1");
}

TEST(ConfigSection, the_command_line_wins_over_the_file)
{
    test::FakeTree t;
    t.write("c.conf", "[node]\nsample-period = 2\n");
    Parsed p;
    EXPECT_EQ(parse({"--config", t.path("c.conf").string(), "--sample-period", "3"}, p), "");
    EXPECT_DOUBLE_EQ(p.period, 3);
}

TEST(ConfigSection, unknown_keys_and_keys_outside_sections_are_errors)
{
    test::FakeTree t;
    t.write("bad.conf", "[node]\nsample-period = 2\nsample-perdiod = 3\n");
    Parsed p;
    EXPECT_NE(parse({"--config", t.path("bad.conf").string()}, p).find("sample-perdiod"), std::string::npos);
    t.write("top.conf", "sample-period = 2\n[node]\nzeromq-hwm = 3\n");
    EXPECT_NE(parse({"--config", t.path("top.conf").string()}, p).find("outside a section"), std::string::npos);
}

TEST(ConfigSection, a_missing_default_file_is_fine_but_a_missing_named_file_is_not)
{
    Parsed p;
    EXPECT_EQ(parse({}, p), "");
    EXPECT_NE(parse({"--config", "/nonexistent/other.conf"}, p), "");
}
