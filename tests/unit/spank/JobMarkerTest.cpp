#include "JobMarker.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sys/stat.h>

using namespace colmet::spank;
using colmet::test::FakeTree;

TEST(JobMarkerTest, write_read_remove)
{
    FakeTree t;
    auto run = t.path("run");  // created on demand
    EXPECT_FALSE(read_marker(run, 7).has_value());
    ASSERT_TRUE(write_marker(run, 7, "perfhw:task_clock").ok());
    EXPECT_EQ(marker_path(run, 7), run / "slurm-7.colmet");
    EXPECT_EQ(read_marker(run, 7).value_or("?"), "perfhw:task_clock");
    struct stat st {};
    ASSERT_EQ(stat(run.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755U);
    ASSERT_TRUE(write_marker(run, 7, "").ok());  // replaced; an empty spec means defaults
    EXPECT_EQ(read_marker(run, 7).value_or("?"), "");
    ASSERT_TRUE(remove_marker(run, 7).ok());
    EXPECT_FALSE(read_marker(run, 7).has_value());
    EXPECT_TRUE(remove_marker(run, 7).ok());  // already gone: fine
}

TEST(JobMarkerTest, write_fails_with_the_path_in_the_message)
{
    FakeTree t;
    t.write("file", "x");
    auto r = write_marker(t.path("file/sub"), 1, "");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("file/sub"), std::string::npos) << r.error().message();
}

TEST(JobMarkerTest, leftover_step_samplers_only_numeric_steps_of_the_job)
{
    FakeTree t;
    for (const char *f :
         {"12.pid", "12.0.pid", "12.15.pid", "12.x.pid", "123.1.pid", "12.3.pid.tmp", "slurm-12.colmet"})
        t.write(std::string("run/") + f, "1");
    auto ids = leftover_step_samplers(t.path("run"), 12);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, (std::vector<std::string>{"12.0", "12.15"}));
    EXPECT_TRUE(leftover_step_samplers(t.path("missing"), 12).empty());
}
