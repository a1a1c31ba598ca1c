#include "node/backends/cgroup_cpu/CgroupCpuBackend.hpp"
#include "BackendTestSupport.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

using namespace colmet;
using namespace colmet::node::backends;
using colmet::test::value;

namespace {

std::unique_ptr<node::MetricBackend> make(const node::JobContext &ctx)
{
    auto backend = make_cgroup_cpu_backend(ctx);
    if (!backend) {
        ADD_FAILURE() << backend.error().message();
        return nullptr;
    }
    return std::move(*backend);
}

}  // namespace

TEST(CgroupCpuBackendTest, describes_its_metrics)
{
    using wire::MetricKind;
    std::vector<wire::MetricDescriptor> expected = {
        {"usage", "s", MetricKind::counter},        {"user", "s", MetricKind::counter},
        {"system", "s", MetricKind::counter},       {"nr_periods", "1", MetricKind::counter},
        {"nr_throttled", "1", MetricKind::counter}, {"throttled_time", "s", MetricKind::counter},
    };
    EXPECT_EQ(cgroup_cpu_metrics(), expected);
}

TEST(CgroupCpuBackendTest, v2_reads_cpu_stat_in_seconds)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v2");
    auto b = make(test::context(test::v2_paths(tree.path("job"))));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->name(), "cgroup_cpu");
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.0);
    EXPECT_DOUBLE_EQ(value(*b, v, "user"), 1.5);
    EXPECT_DOUBLE_EQ(value(*b, v, "system"), 0.5);
    EXPECT_DOUBLE_EQ(value(*b, v, "nr_periods"), 10);
    EXPECT_DOUBLE_EQ(value(*b, v, "nr_throttled"), 2);
    EXPECT_DOUBLE_EQ(value(*b, v, "throttled_time"), 0.003);
    EXPECT_EQ(b->status(), "");
    EXPECT_EQ(b->failed_samples(), 0u);

    // The kept fd sees new content at the next sample.
    tree.write("job/cpu.stat", "usage_usec 4000000\nuser_usec 3000000\nsystem_usec 1000000\n"
                               "nr_periods 11\nnr_throttled 2\nthrottled_usec 3000\n");
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 4.0);
    EXPECT_DOUBLE_EQ(value(*b, v, "nr_periods"), 11);
}

// Slurm on cgroup v2: the step daemons' CPU (step_*/slurm) is not the job's;
// the tasks' leaves are summed, and a leaf that is removed (its step ended)
// keeps its last value.
TEST(CgroupCpuBackendTest, v2_leaves_sum_the_tasks_and_keep_removed_leaves)
{
    test::FakeTree tree;
    auto stat = [](int usage, int user, int sys) {
        return "usage_usec " + std::to_string(usage) + "\nuser_usec " + std::to_string(user) + "\nsystem_usec " +
               std::to_string(sys) + "\nnr_periods 5\nnr_throttled 1\nthrottled_usec 7000\n";
    };
    tree.write("job/cpu.stat", stat(9000000, 8000000, 1000000));
    tree.write("job/step_0/slurm/cpu.stat", stat(3000000, 2000000, 1000000));
    tree.write("job/step_0/user/cpu.stat", stat(2000000, 2000000, 0));
    tree.write("job/step_extern/user/cpu.stat", stat(100000, 50000, 50000));
    tree.write("job/step_extern/slurm/cpu.stat", stat(900000, 900000, 0));
    auto ctx = test::context(test::v2_paths(tree.path("job")));
    ctx.cpu_leaves = {"step_*/user"};
    auto b = make(ctx);
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.1);
    EXPECT_DOUBLE_EQ(value(*b, v, "user"), 2.05);
    EXPECT_DOUBLE_EQ(value(*b, v, "system"), 0.05);
    // Throttling stays the whole directory's.
    EXPECT_DOUBLE_EQ(value(*b, v, "nr_throttled"), 1);
    EXPECT_DOUBLE_EQ(value(*b, v, "throttled_time"), 0.007);
    EXPECT_EQ(b->status(), "");

    // Step 0 grows, then ends and is removed; step 1 starts.
    tree.write("job/step_0/user/cpu.stat", stat(2500000, 2500000, 0));
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.6);
    std::filesystem::remove_all(tree.path("job/step_0"));
    tree.write("job/step_1/user/cpu.stat", stat(400000, 300000, 100000));
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 3.0);
    EXPECT_DOUBLE_EQ(value(*b, v, "system"), 0.15);
    EXPECT_EQ(b->status(), "");

    // A leaf whose cpu.stat cannot be parsed is reported; its last value stands.
    tree.write("job/step_1/user/cpu.stat", "garbage");
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 3.0);
    EXPECT_NE(b->status().find("cpu.stat of a leaf"), std::string_view::npos);
}

// A pattern that climbs out of the job's directory is never read.
TEST(CgroupCpuBackendTest, v2_leaves_refuse_patterns_outside_the_directory)
{
    test::FakeTree tree;
    tree.write("job/cpu.stat", "usage_usec 1000000\nuser_usec 1000000\nsystem_usec 0\n");
    tree.write("other/cpu.stat", "usage_usec 5000000\nuser_usec 5000000\nsystem_usec 0\n");
    auto ctx = test::context(test::v2_paths(tree.path("job")));
    ctx.cpu_leaves = {"../other", "./x", ""};
    auto b = make(ctx);
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 0.0);
}

TEST(CgroupCpuBackendTest, v2_without_cpu_controller_reports_throttling_once)
{
    test::FakeTree tree;
    tree.write("job/cpu.stat", "usage_usec 2000000\nuser_usec 1500000\nsystem_usec 500000\n");
    auto b = make(test::context(test::v2_paths(tree.path("job"))));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.0);
    EXPECT_TRUE(std::isnan(value(*b, v, "nr_periods")));
    EXPECT_TRUE(std::isnan(value(*b, v, "throttled_time")));
    EXPECT_NE(b->status().find("cpu controller not enabled"), std::string_view::npos);
    v = test::sample(*b);
    EXPECT_TRUE(std::isnan(value(*b, v, "nr_periods")));
    EXPECT_EQ(b->status(), "");
}

TEST(CgroupCpuBackendTest, v1_reads_cpuacct_and_cpu)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto b = make(test::context(test::v1_paths(tree.root(), {"cpuacct", "cpu", "memory"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.5);
    EXPECT_DOUBLE_EQ(value(*b, v, "user"), 2.0);  // cpuacct.usage_user, not cpuacct.stat
    EXPECT_DOUBLE_EQ(value(*b, v, "system"), 0.5);
    EXPECT_DOUBLE_EQ(value(*b, v, "nr_periods"), 100);
    EXPECT_DOUBLE_EQ(value(*b, v, "nr_throttled"), 7);
    EXPECT_DOUBLE_EQ(value(*b, v, "throttled_time"), 1.5);
    EXPECT_EQ(b->status(), "");
}

TEST(CgroupCpuBackendTest, v1_falls_back_to_cpuacct_stat_ticks)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    std::filesystem::remove(tree.path("cpuacct/job/cpuacct.usage_user"));
    std::filesystem::remove(tree.path("cpuacct/job/cpuacct.usage_sys"));
    auto b = make(test::context(test::v1_paths(tree.root(), {"cpuacct", "cpu"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    EXPECT_DOUBLE_EQ(value(*b, v, "user"), 210 / hz);
    EXPECT_DOUBLE_EQ(value(*b, v, "system"), 45 / hz);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.5);
}

TEST(CgroupCpuBackendTest, v1_missing_file_gives_nan_and_names_it)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    std::filesystem::remove(tree.path("cpu/job/cpu.stat"));
    auto b = make(test::context(test::v1_paths(tree.root(), {"cpuacct", "cpu"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.5);
    EXPECT_DOUBLE_EQ(value(*b, v, "user"), 2.0);
    EXPECT_TRUE(std::isnan(value(*b, v, "nr_periods")));
    EXPECT_TRUE(std::isnan(value(*b, v, "nr_throttled")));
    EXPECT_TRUE(std::isnan(value(*b, v, "throttled_time")));
    EXPECT_EQ(b->status(), "cpu.stat: No such file or directory");
    EXPECT_EQ(b->failed_samples(), 1u);
}

TEST(CgroupCpuBackendTest, v1_malformed_value_gives_nan_and_a_reason)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto b = make(test::context(test::v1_paths(tree.root(), {"cpuacct", "cpu"})));
    ASSERT_TRUE(b);
    tree.write("cpuacct/job/cpuacct.usage", "garbage\n");
    tree.write("cpu/job/cpu.stat", "nr_periods 1\nnr_throttled x\n");
    auto v = test::sample(*b);
    EXPECT_TRUE(std::isnan(value(*b, v, "usage")));
    EXPECT_DOUBLE_EQ(value(*b, v, "system"), 0.5);
    EXPECT_TRUE(std::isnan(value(*b, v, "nr_periods")));
    EXPECT_NE(b->status().find("cpuacct.usage: not a number"), std::string_view::npos);
    EXPECT_NE(b->status().find("cpu.stat: bad value for nr_throttled"), std::string_view::npos);
}

TEST(CgroupCpuBackendTest, v1_without_cpu_controller_keeps_cpu_time)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto b = make(test::context(test::v1_paths(tree.root(), {"cpuacct"})));
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "usage"), 2.5);
    EXPECT_TRUE(std::isnan(value(*b, v, "nr_periods")));
    EXPECT_EQ(b->status(), "cpu.stat: no job directory in the cpu hierarchy");
}

TEST(CgroupCpuBackendTest, factory_fails_without_the_controller)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1");
    auto unmounted = make_cgroup_cpu_backend(test::context(test::v1_paths(tree.root(), {"memory"})));
    ASSERT_FALSE(unmounted);
    EXPECT_EQ(unmounted.error().code(), Errc::unsupported);
    EXPECT_EQ(unmounted.error().message(),
              "cgroup_cpu: no job directory in the cpuacct hierarchy (not mounted, or the scheduler made none there)");

    std::filesystem::remove_all(tree.path("cpuacct/job"));
    auto gone = make_cgroup_cpu_backend(test::context(test::v1_paths(tree.root(), {"cpuacct"})));
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code(), Errc::not_found);
    EXPECT_NE(gone.error().message().find("cpuacct/job"), std::string::npos);

    auto v2 = make_cgroup_cpu_backend(test::context(test::v2_paths(tree.path("nowhere"))));
    ASSERT_FALSE(v2);
    EXPECT_EQ(v2.error().code(), Errc::not_found);
    auto v2_empty = make_cgroup_cpu_backend(test::context(test::v2_paths({})));
    ASSERT_FALSE(v2_empty);
    EXPECT_EQ(v2_empty.error().code(), Errc::unsupported);
}
