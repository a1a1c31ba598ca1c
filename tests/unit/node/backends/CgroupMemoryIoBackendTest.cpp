#include "BackendTestSupport.hpp"
#include "node/backends/cgroup_io/CgroupIoBackend.hpp"
#include "node/backends/cgroup_memory/CgroupMemoryBackend.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace colmet;
using namespace colmet::node::backends;
using colmet::test::value;

namespace {

template <typename Factory>
std::unique_ptr<node::MetricBackend> make(Factory factory, const node::JobContext &ctx)
{
    auto backend = factory(ctx);
    if (!backend) {
        ADD_FAILURE() << backend.error().message();
        return nullptr;
    }
    return std::move(*backend);
}

}  // namespace

TEST(CgroupMemoryBackendTest, describes_its_metrics)
{
    using wire::MetricKind;
    std::vector<wire::MetricDescriptor> expected = {
        {"current", "B", MetricKind::gauge},        {"peak", "B", MetricKind::gauge},
        {"anon", "B", MetricKind::gauge},           {"file", "B", MetricKind::gauge},
        {"major_faults", "1", MetricKind::counter}, {"limit", "B", MetricKind::gauge},
    };
    EXPECT_EQ(cgroup_memory_metrics(), expected);
}

// The job cgroup's limit: bytes, NaN when there is none ("max", v1's
// page-counter maximum, no file), a problem when the file holds garbage.
TEST(CgroupMemoryBackendTest, limit_is_the_cgroups_own_and_nan_when_unlimited)
{
    struct Case {
        bool v2;
        const char *content;  // nullptr: no file
        double expected;      // NaN: none
        const char *status;
    };
    const double nan = std::nan("");
    const Case cases[] = {
        {true, "2147483648\n", 2147483648.0, ""},
        {true, "max\n", nan, ""},
        {true, nullptr, nan, ""},
        {true, "lots\n", nan, "memory.max: not a number"},
        {false, "1073741824\n", 1073741824.0, ""},
        {false, "9223372036854771712\n", nan, ""},
        {false, nullptr, nan, ""},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(std::string(c.v2 ? "v2 " : "v1 ") + (c.content ? c.content : "(no file)"));
        test::FakeTree tree;
        tree.copy_fixture(c.v2 ? "backends/v2" : "backends/v1");
        const std::string file = c.v2 ? "job/memory.max" : "memory/job/memory.limit_in_bytes";
        std::filesystem::remove(tree.path(file));
        if (c.content)
            tree.write(file, c.content);
        auto b = make(make_cgroup_memory_backend, c.v2 ? test::context(test::v2_paths(tree.path("job")))
                                                       : test::context(test::v1_paths(tree.root(), {"memory"})));
        ASSERT_TRUE(b);
        auto v = test::sample(*b);
        if (std::isnan(c.expected))
            EXPECT_TRUE(std::isnan(value(*b, v, "limit")));
        else
            EXPECT_DOUBLE_EQ(value(*b, v, "limit"), c.expected);
        EXPECT_EQ(b->status(), c.status);
        EXPECT_DOUBLE_EQ(value(*b, v, "current"), c.v2 ? 52428800 : 104857600);
    }
}

TEST(CgroupMemoryBackendTest, v2_reads_bytes)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v2");
    auto b = make(make_cgroup_memory_backend, test::context(test::v2_paths(tree.path("job"))));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->name(), "cgroup_memory");
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "current"), 52428800);
    EXPECT_DOUBLE_EQ(value(*b, v, "peak"), 73400320);
    EXPECT_DOUBLE_EQ(value(*b, v, "anon"), 1294336);
    EXPECT_DOUBLE_EQ(value(*b, v, "file"), 1826816);
    EXPECT_DOUBLE_EQ(value(*b, v, "major_faults"), 12);
    EXPECT_EQ(b->status(), "");
}

TEST(CgroupMemoryBackendTest, v2_without_memory_peak_says_so_once)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v2");
    std::filesystem::remove(tree.path("job/memory.peak"));
    auto b = make(make_cgroup_memory_backend, test::context(test::v2_paths(tree.path("job"))));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_TRUE(std::isnan(value(*b, v, "peak")));
    EXPECT_DOUBLE_EQ(value(*b, v, "current"), 52428800);
    EXPECT_DOUBLE_EQ(value(*b, v, "anon"), 1294336);
    EXPECT_NE(b->status().find("memory.peak"), std::string_view::npos);
    v = test::sample(*b);
    EXPECT_TRUE(std::isnan(value(*b, v, "peak")));
    EXPECT_EQ(b->status(), "");
    EXPECT_EQ(b->failed_samples(), 1u);
}

TEST(CgroupMemoryBackendTest, v1_reads_hierarchical_totals)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto b = make(make_cgroup_memory_backend, test::context(test::v1_paths(tree.root(), {"memory", "cpuacct"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "current"), 104857600);
    EXPECT_DOUBLE_EQ(value(*b, v, "peak"), 209715200);
    EXPECT_DOUBLE_EQ(value(*b, v, "anon"), 50733056);
    EXPECT_DOUBLE_EQ(value(*b, v, "file"), 150999040);
    EXPECT_DOUBLE_EQ(value(*b, v, "major_faults"), 1648);
    EXPECT_EQ(b->status(), "");
}

TEST(CgroupMemoryBackendTest, v1_missing_file_gives_nan_and_names_it)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    std::filesystem::remove(tree.path("memory/job/memory.stat"));
    auto b = make(make_cgroup_memory_backend, test::context(test::v1_paths(tree.root(), {"memory"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "current"), 104857600);
    EXPECT_DOUBLE_EQ(value(*b, v, "peak"), 209715200);
    EXPECT_TRUE(std::isnan(value(*b, v, "anon")));
    EXPECT_TRUE(std::isnan(value(*b, v, "file")));
    EXPECT_TRUE(std::isnan(value(*b, v, "major_faults")));
    EXPECT_EQ(b->status(), "memory.stat: No such file or directory");
    // Failing every sample: counted every sample.
    test::sample(*b);
    EXPECT_EQ(b->failed_samples(), 2u);
}

TEST(CgroupMemoryBackendTest, missing_key_names_it)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v2");
    auto b = make(make_cgroup_memory_backend, test::context(test::v2_paths(tree.path("job"))));
    ASSERT_TRUE(b);
    tree.write("job/memory.stat", "anon 10\nfile 20\n");
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "file"), 20);
    EXPECT_TRUE(std::isnan(value(*b, v, "major_faults")));
    EXPECT_EQ(b->status(), "memory.stat: no pgmajfault");
}

TEST(CgroupMemoryBackendTest, factory_failures)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto unmounted = make_cgroup_memory_backend(test::context(test::v1_paths(tree.root(), {"cpuacct"})));
    ASSERT_FALSE(unmounted);
    EXPECT_EQ(unmounted.error().code(), Errc::unsupported);
    EXPECT_EQ(
        unmounted.error().message(),
        "cgroup_memory: no job directory in the memory hierarchy (not mounted, or the scheduler made none there)");

    std::filesystem::remove_all(tree.path("memory/job"));
    auto gone = make_cgroup_memory_backend(test::context(test::v1_paths(tree.root(), {"memory"})));
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code(), Errc::not_found);

    tree.write("v2job/cpu.stat", "usage_usec 1\n");  // a v2 cgroup without the memory controller
    auto disabled = make_cgroup_memory_backend(test::context(test::v2_paths(tree.path("v2job"))));
    ASSERT_FALSE(disabled);
    EXPECT_EQ(disabled.error().code(), Errc::unsupported);
    EXPECT_NE(disabled.error().message().find("memory controller not enabled"), std::string::npos);
}

TEST(CgroupIoBackendTest, describes_its_metrics)
{
    using wire::MetricKind;
    std::vector<wire::MetricDescriptor> expected = {
        {"read_bytes", "B", MetricKind::counter},
        {"write_bytes", "B", MetricKind::counter},
        {"read_ops", "1", MetricKind::counter},
        {"write_ops", "1", MetricKind::counter},
    };
    EXPECT_EQ(cgroup_io_metrics(), expected);
}

TEST(CgroupIoBackendTest, v2_sums_io_stat)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v2");
    auto b = make(make_cgroup_io_backend, test::context(test::v2_paths(tree.path("job"))));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->name(), "cgroup_io");
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_bytes"), 1221632);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_bytes"), 1048576);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_ops"), 51);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_ops"), 17);
    tree.write("job/io.stat", "");
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_bytes"), 0);
    EXPECT_EQ(b->status(), "");
}

TEST(CgroupIoBackendTest, v1_reads_recursive_files)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto b = make(make_cgroup_io_backend, test::context(test::v1_paths(tree.root(), {"blkio"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_bytes"), 1220608);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_bytes"), 1048576);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_ops"), 50);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_ops"), 17);
    EXPECT_EQ(b->status(), "");
}

TEST(CgroupIoBackendTest, v1_falls_back_to_non_recursive_files)
{
    test::FakeTree tree;
    tree.write("blkio/job/blkio.throttle.io_service_bytes", "8:0 Read 10\n8:0 Write 20\nTotal 30\n");
    tree.write("blkio/job/blkio.throttle.io_serviced", "8:0 Read 1\n8:0 Write 2\nTotal 3\n");
    auto b = make(make_cgroup_io_backend, test::context(test::v1_paths(tree.root(), {"blkio"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_bytes"), 10);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_bytes"), 20);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_ops"), 1);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_ops"), 2);
}

TEST(CgroupIoBackendTest, v1_missing_file_gives_nan_and_names_it)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    std::filesystem::remove(tree.path("blkio/job/blkio.throttle.io_serviced_recursive"));
    auto b = make(make_cgroup_io_backend, test::context(test::v1_paths(tree.root(), {"blkio"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_bytes"), 1220608);
    EXPECT_TRUE(std::isnan(value(*b, v, "read_ops")));
    EXPECT_TRUE(std::isnan(value(*b, v, "write_ops")));
    EXPECT_EQ(b->status(), "blkio.throttle.io_serviced_recursive: No such file or directory");
}

TEST(CgroupIoBackendTest, factory_failures)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto unmounted = make_cgroup_io_backend(test::context(test::v1_paths(tree.root(), {"memory"})));
    ASSERT_FALSE(unmounted);
    EXPECT_EQ(unmounted.error().message(),
              "cgroup_io: no job directory in the blkio hierarchy (not mounted, or the scheduler made none there)");
    test::FakeTree bare;
    bare.mkdir("blkio/job");
    auto no_files = make_cgroup_io_backend(test::context(test::v1_paths(bare.root(), {"blkio"})));
    ASSERT_FALSE(no_files);
    EXPECT_EQ(no_files.error().code(), Errc::not_found);
    tree.mkdir("v2job");
    auto disabled = make_cgroup_io_backend(test::context(test::v2_paths(tree.path("v2job"))));
    ASSERT_FALSE(disabled);
    EXPECT_EQ(disabled.error().code(), Errc::unsupported);
    EXPECT_NE(disabled.error().message().find("io controller not enabled"), std::string::npos);
}
