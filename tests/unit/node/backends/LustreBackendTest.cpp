#include "NodeTestSupport.hpp"

#include "node/backends/lustre/LustreBackend.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace colmet;
using namespace colmet::node::backends::lustre;
using test::at;
using test::take;

TEST(LustreBackendTest, parses_both_stats_formats)
{
    MountValues v;
    ASSERT_TRUE(parse_llite_stats("snapshot_time 1.5 secs.usecs\n"
                                  "read_bytes 17 samples [bytes] 0 4194304 30431232\n"
                                  "write_bytes 9 samples [bytes] 0 4194304 17587451 999\n"
                                  "open 4 samples [regs]\n"
                                  "close 3 samples [usecs] 1 2 3 4\n",
                                  v));
    EXPECT_EQ(v[0], 17);
    EXPECT_EQ(v[1], 30431232);
    EXPECT_EQ(v[2], 9);
    EXPECT_EQ(v[3], 17587451);  // the sum, not the sum of squares after it
    EXPECT_EQ(v[4], 4);         // open
    EXPECT_EQ(v[5], 3);         // close
    EXPECT_EQ(v[6], 0);         // mmap: absent, so 0
    auto bad = parse_llite_stats("read_bytes 17 samples [bytes] 0\n", v);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message(), "read_bytes: no byte sum");
    EXPECT_FALSE(parse_llite_stats("open x samples [regs]\n", v));
}

TEST(LustreBackendTest, client_with_two_mounts_in_proc_and_debugfs)
{
    test::FakeTree tree;
    tree.copy_fixture("node/lustre");
    auto b = make_lustre_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ((*b)->name(), "lustre");
    EXPECT_EQ((*b)->scope(), wire::Scope::node);
    const auto &m = (*b)->metrics();
    ASSERT_EQ(m.size(), 2 * k_per_mount + 4);
    EXPECT_EQ(m[0].name, "home.read_calls");
    EXPECT_EQ(m[0].unit, "1");
    EXPECT_EQ(m[1].name, "home.read_bytes");
    EXPECT_EQ(m[1].unit, "B");
    EXPECT_EQ(m[4].name, "home.open");
    EXPECT_EQ(m[k_per_mount].name, "scratch.read_calls");
    EXPECT_EQ(m[2 * k_per_mount + 1].name, "read_bytes");
    EXPECT_EQ(m[2 * k_per_mount + 1].unit, "B");
    for (const auto &d : m)
        EXPECT_EQ(d.kind, wire::MetricKind::counter);

    auto v = take(**b);
    EXPECT_EQ((*b)->status(), "");
    EXPECT_EQ(at(**b, v, "home.read_calls"), 7);
    EXPECT_EQ(at(**b, v, "home.read_bytes"), 1052672);
    EXPECT_EQ(at(**b, v, "home.write_calls"), 3);
    EXPECT_EQ(at(**b, v, "home.write_bytes"), 12388);
    EXPECT_EQ(at(**b, v, "home.open"), 9);
    EXPECT_EQ(at(**b, v, "home.mkdir"), 1);
    EXPECT_EQ(at(**b, v, "home.unlink"), 2);
    EXPECT_EQ(at(**b, v, "home.rename"), 1);
    EXPECT_EQ(at(**b, v, "home.getattr"), 0);
    EXPECT_EQ(at(**b, v, "scratch.read_calls"), 1520);
    EXPECT_EQ(at(**b, v, "scratch.read_bytes"), 2147483648.0);
    EXPECT_EQ(at(**b, v, "scratch.write_calls"), 880);
    EXPECT_EQ(at(**b, v, "scratch.write_bytes"), 1073741824.0);
    EXPECT_EQ(at(**b, v, "scratch.open"), 310);
    EXPECT_EQ(at(**b, v, "scratch.close"), 308);
    EXPECT_EQ(at(**b, v, "scratch.seek"), 12);
    EXPECT_EQ(at(**b, v, "scratch.fsync"), 4);
    EXPECT_EQ(at(**b, v, "scratch.getattr"), 1250);
    EXPECT_EQ(at(**b, v, "scratch.statfs"), 3);
    // The original's four columns: sums over the mounts.
    EXPECT_EQ(at(**b, v, "read_calls"), 1527);
    EXPECT_EQ(at(**b, v, "read_bytes"), 2148536320.0);
    EXPECT_EQ(at(**b, v, "write_calls"), 883);
    EXPECT_EQ(at(**b, v, "write_bytes"), 1073754212.0);
}

TEST(LustreBackendTest, an_unreadable_mount_is_nan_and_so_are_the_sums)
{
    test::FakeTree tree;
    tree.copy_fixture("node/lustre");
    auto b = make_lustre_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    tree.write("proc/fs/lustre/llite/scratch-ffff8d1c3a7e5000/stats", "read_bytes 1 samples [bytes]\n");
    auto v = take(**b);
    EXPECT_EQ(at(**b, v, "home.read_calls"), 7);
    EXPECT_TRUE(std::isnan(at(**b, v, "scratch.read_calls")));
    EXPECT_TRUE(std::isnan(at(**b, v, "read_bytes")));
    EXPECT_EQ((*b)->status(), "scratch: read_bytes: no byte sum");
}

TEST(LustreBackendTest, two_mounts_of_one_file_system_keep_their_full_names)
{
    test::FakeTree tree;
    tree.write("proc/fs/lustre/llite/work-ffff000011112222/stats", "open 1 samples [regs]\n");
    tree.write("proc/fs/lustre/llite/work-ffff000033334444/stats", "open 2 samples [regs]\n");
    tree.write("proc/fs/lustre/llite/notamount/other", "");
    auto mounts = find_mounts(tree.path("proc"), tree.path("sys"));
    ASSERT_EQ(mounts.size(), 2u);
    EXPECT_EQ(mounts[0].label, "work_ffff000011112222");
    EXPECT_EQ(mounts[1].label, "work_ffff000033334444");
}

TEST(LustreBackendTest, no_mount_is_not_found)
{
    test::FakeTree tree;
    auto b = make_lustre_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().code(), Errc::not_found);
    EXPECT_EQ(b.error().message(), "no Lustre client mount (" + tree.path("proc/fs/lustre/llite").string() + ", " +
                                       tree.path("sys/kernel/debug/lustre/llite").string() + ")");
}
