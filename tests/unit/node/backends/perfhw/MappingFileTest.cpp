#include "node/backends/perfhw/MappingFile.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace colmet;
using namespace colmet::node::backends::perfhw;

TEST(PerfhwMappingFile, names_every_column_byte_for_byte)
{
    test::FakeTree tree;
    std::vector<wire::MetricDescriptor> metrics = {{"task_clock", "s", wire::MetricKind::counter},
                                                   {"cpu_cycles", "1", wire::MetricKind::counter},
                                                   {"task_clock.scaling", "1", wire::MetricKind::gauge},
                                                   {"cpu_cycles.scaling", "1", wire::MetricKind::gauge}};
    auto path = write_mapping_file(tree.root(), metrics, 1'764'678'000'123'456'789);
    ASSERT_TRUE(path) << path.error().message();
    EXPECT_EQ(path->filename(), "perfhw_mapping.1764678000.123456.csv");
    std::ifstream in(*path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), "counter_1,task_clock\n"
                          "counter_2,cpu_cycles\n"
                          "counter_3,task_clock.scaling\n"
                          "counter_4,cpu_cycles.scaling\n");
    // Never overwritten: the same instant again is an error, not a silent replace.
    auto again = write_mapping_file(tree.root(), metrics, 1'764'678'000'123'456'789);
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().message().find("File exists"), std::string::npos);
}

TEST(PerfhwMappingFile, a_missing_directory_is_a_clear_error)
{
    auto r = write_mapping_file("/nonexistent/colmet", {{"x", "1", wire::MetricKind::counter}}, 1);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("/nonexistent/colmet/perfhw_mapping.0.000000.csv"), std::string::npos);
}
