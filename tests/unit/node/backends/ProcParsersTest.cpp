#include "BackendTestSupport.hpp"
#include "node/backends/processes/proc_parsers.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::node::backends;

TEST(ProcStatTest, parses_the_file_of_this_machine)
{
    auto st = parse_proc_stat(test::fixture_text("backends/text/proc_stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->ppid, 6373);
    EXPECT_EQ(st->num_threads, 1u);
    EXPECT_EQ(st->starttime, 202538u);
}

TEST(ProcStatTest, comm_with_blanks_and_parentheses)
{
    // A real stat line of a program named "my ) (prog".
    auto st = parse_proc_stat(test::fixture_text("backends/text/proc_stat_odd_comm"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->ppid, 6383);
    EXPECT_EQ(st->num_threads, 1u);
    EXPECT_EQ(st->starttime, 202540u);

    auto tricky = parse_proc_stat("77 (a) S 1 (b)) R 5 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 12 0 9999 0 0\n");
    ASSERT_TRUE(tricky);
    EXPECT_EQ(tricky->ppid, 5);
    EXPECT_EQ(tricky->num_threads, 12u);
    EXPECT_EQ(tricky->starttime, 9999u);
}

TEST(ProcStatTest, rejects_malformed)
{
    EXPECT_FALSE(parse_proc_stat(""));
    EXPECT_FALSE(parse_proc_stat("12 no parenthesis S 1"));
    auto short_line = parse_proc_stat("12 (x) S 1 2 3\n");
    ASSERT_FALSE(short_line);
    EXPECT_EQ(short_line.error().code(), Errc::parse);
    EXPECT_FALSE(parse_proc_stat("1 (x) S one 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 9 0"));
    EXPECT_FALSE(parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 many 0 9 0"));
    EXPECT_FALSE(parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 -9 0"));
}

TEST(ProcIoTest, parses_the_file_of_this_machine)
{
    auto io = parse_proc_io(test::fixture_text("backends/text/proc_io"));
    ASSERT_TRUE(io);
    EXPECT_EQ((*io)[k_rchar], 6976u);
    EXPECT_EQ((*io)[k_wchar], 0u);
    EXPECT_EQ((*io)[k_syscr], 10u);
    EXPECT_EQ((*io)[k_cancelled_write_bytes], 0u);
}

TEST(ProcIoTest, parses_every_field)
{
    auto io = parse_proc_io("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                            "cancelled_write_bytes: 7\n");
    ASSERT_TRUE(io);
    EXPECT_EQ(*io, (ProcIo{1, 2, 3, 4, 5, 6, 7}));
}

TEST(ProcIoTest, rejects_missing_keys_and_non_numbers)
{
    auto missing = parse_proc_io("rchar: 1\nwchar: 2\n");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message().find("syscr"), std::string::npos);
    EXPECT_FALSE(parse_proc_io(""));
    EXPECT_FALSE(parse_proc_io("rchar: x\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                               "cancelled_write_bytes: 7\n"));
}

TEST(PidListTest, appends_pids)
{
    std::vector<pid_t> pids{1};
    ASSERT_TRUE(parse_pid_list("42\n7\n\n1000\n", pids));
    EXPECT_EQ(pids, (std::vector<pid_t>{1, 42, 7, 1000}));
    pids.clear();
    ASSERT_TRUE(parse_pid_list("", pids));
    EXPECT_TRUE(pids.empty());
}

TEST(PidListTest, rejects_non_pids)
{
    std::vector<pid_t> pids;
    EXPECT_FALSE(parse_pid_list("12\nabc\n", pids));
    EXPECT_FALSE(parse_pid_list("0\n", pids));
    EXPECT_FALSE(parse_pid_list("99999999999\n", pids));
}
