#include "BackendTestSupport.hpp"
#include "node/backends/cgroup_io/io_parsers.hpp"
#include "node/backends/cgroup_memory/memory_parsers.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::node::backends;

TEST(MemoryStatTest, v1_prefers_hierarchical_totals)
{
    auto st = parse_v1_memory_stat(test::fixture_text("backends/text/v1_memory.stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->anon, 50733056u);      // total_rss, not rss
    EXPECT_EQ(st->file, 150999040u);     // total_cache
    EXPECT_EQ(st->major_faults, 1648u);  // total_pgmajfault
}

TEST(MemoryStatTest, v1_falls_back_to_local_keys)
{
    auto st = parse_v1_memory_stat("cache 300\nrss 100\npgmajfault 7\nmapped_file 1\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->anon, 100u);
    EXPECT_EQ(st->file, 300u);
    EXPECT_EQ(st->major_faults, 7u);
}

TEST(MemoryStatTest, v2_reads_anon_file_pgmajfault)
{
    auto st = parse_v2_memory_stat(test::fixture_text("backends/text/v2_memory.stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->anon, 1294336u);
    EXPECT_EQ(st->file, 1826816u);
    EXPECT_EQ(st->major_faults, 12u);
}

TEST(MemoryStatTest, missing_keys_empty_and_malformed)
{
    auto st = parse_v2_memory_stat("anon 5\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->anon, 5u);
    EXPECT_FALSE(st->file);
    EXPECT_FALSE(st->major_faults);
    auto empty = parse_v1_memory_stat("");
    ASSERT_TRUE(empty);
    EXPECT_FALSE(empty->anon);
    auto bad = parse_v2_memory_stat("anon 5\nfile five\n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code(), Errc::parse);
    EXPECT_NE(bad.error().message().find("file"), std::string::npos);
    EXPECT_FALSE(parse_v1_memory_stat("total_rss -4096\n"));
}

TEST(BlkioThrottleTest, sums_read_and_write_of_this_machine)
{
    auto bytes = parse_blkio_throttle(test::fixture_text("backends/text/v1_blkio.throttle.io_service_bytes_recursive"));
    ASSERT_TRUE(bytes);
    EXPECT_EQ(bytes->read, 1220608u);
    EXPECT_EQ(bytes->write, 1048576u);
    auto ops = parse_blkio_throttle(test::fixture_text("backends/text/v1_blkio.throttle.io_serviced_recursive"));
    ASSERT_TRUE(ops);
    EXPECT_EQ(ops->read, 50u);
    EXPECT_EQ(ops->write, 17u);
}

TEST(BlkioThrottleTest, sums_over_devices_and_ignores_other_lines)
{
    auto t = parse_blkio_throttle("8:0 Read 4096\n8:0 Write 10\n8:0 Sync 4106\n8:0 Total 4106\n"
                                  "8:16 Read 1\n8:16 Write 2\n8:16 Discard 9\nTotal 4109\n");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->read, 4097u);
    EXPECT_EQ(t->write, 12u);
}

TEST(BlkioThrottleTest, no_device_or_empty_is_zero)
{
    auto t = parse_blkio_throttle("Total 0\n");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->read, 0u);
    EXPECT_EQ(t->write, 0u);
    EXPECT_TRUE(parse_blkio_throttle(""));
}

TEST(BlkioThrottleTest, rejects_bad_values)
{
    auto t = parse_blkio_throttle("8:0 Read many\n");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code(), Errc::parse);
    EXPECT_NE(t.error().message().find("8:0 Read many"), std::string::npos);
    EXPECT_FALSE(parse_blkio_throttle("8:0 Write\n"));
    EXPECT_FALSE(parse_blkio_throttle("8:0 Write 1 2\n"));
}

TEST(IoStatTest, sums_over_devices)
{
    auto st = parse_io_stat(test::fixture_text("backends/text/v2_io.stat"));
    ASSERT_TRUE(st);
    EXPECT_EQ(st->rbytes, 1221632u);
    EXPECT_EQ(st->wbytes, 1048576u);
    EXPECT_EQ(st->rios, 51u);
    EXPECT_EQ(st->wios, 17u);
}

TEST(IoStatTest, empty_file_is_zero)
{
    auto st = parse_io_stat("");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->rbytes, 0u);
    EXPECT_EQ(st->wios, 0u);
}

TEST(IoStatTest, ignores_unknown_keys_including_non_integers)
{
    auto st = parse_io_stat("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=5\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->rbytes, 1u);
    EXPECT_EQ(st->wbytes, 2u);
    EXPECT_EQ(st->rios, 3u);
    EXPECT_EQ(st->wios, 4u);
}

TEST(IoStatTest, rejects_malformed_lines)
{
    EXPECT_FALSE(parse_io_stat("8:0 rbytes=x\n"));
    EXPECT_FALSE(parse_io_stat("8:0 rbytes=\n"));
    EXPECT_FALSE(parse_io_stat("8:0 rbytes 12\n"));
}
