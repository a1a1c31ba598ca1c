// The node-level backend table, start-up through make_node_backends() (one
// log line per backend this node lacks, mapping files) and the hot path
// without allocation.
#include "NodeTestSupport.hpp"

#include "AllocationCounter.hpp"
#include "common/file_io.hpp"
#include "node/backends/NodeBackends.hpp"
#include "node/backends/rapl/RaplBackend.hpp"
#include "node/backends/registry.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <sys/mman.h>
#include <unistd.h>

using namespace colmet;

namespace {

// Log lines of the default logger, captured while it lives.
class LogCapture {
public:
    LogCapture() : m_previous(spdlog::default_logger())
    {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(m_out);
        sink->set_pattern("%l %v");
        auto logger = std::make_shared<spdlog::logger>("test", sink);
        logger->set_level(spdlog::level::info);
        spdlog::set_default_logger(logger);
    }
    ~LogCapture() { spdlog::set_default_logger(m_previous); }
    std::string text() const { return m_out.str(); }

private:
    std::ostringstream m_out;
    std::shared_ptr<spdlog::logger> m_previous;
};

node::NodeBackendRequest all_of(const test::FakeTree &tree)
{
    node::NodeBackendRequest r;
    r.ctx = {tree.path("sys"), tree.path("proc")};
    r.enabled = {"lustre", "rapl", "infiniband", "temperature"};
    return r;
}

}  // namespace

TEST(NodeBackendsTest, the_table_lists_the_four_node_backends)
{
    const auto &table = node::node_backends();
    ASSERT_EQ(table.size(), 4u);
    EXPECT_EQ(table[0].name, "rapl");
    EXPECT_EQ(table[0].info->flag, "--enable-RAPL");
    EXPECT_EQ(table[1].name, "temperature");
    EXPECT_EQ(table[1].info->flag, "--enable-temperature");
    EXPECT_EQ(table[2].name, "infiniband");
    EXPECT_EQ(table[2].info->flag, "--enable-infiniband");
    EXPECT_EQ(table[3].name, "lustre");
    EXPECT_EQ(table[3].info->flag, "--enable-lustre");
    EXPECT_NE(node::find_node_backend("rapl"), nullptr);
    EXPECT_EQ(node::find_node_backend("cgroup_cpu"), nullptr);
    EXPECT_EQ(node::find_backend("rapl"), nullptr);  // not a job backend
}

TEST(NodeBackendsTest, a_node_without_the_devices_logs_one_line_per_backend_and_builds_nothing)
{
    test::FakeTree tree;
    tree.mkdir("sys");
    tree.mkdir("proc");
    LogCapture log;
    auto backends = node::make_node_backends(all_of(tree), 1);
    EXPECT_TRUE(backends.empty());
    const std::string sys = tree.path("sys").string();
    EXPECT_EQ(log.text(),
              "warning backend rapl not available: no RAPL zones in " + sys +
                  "/class/powercap and no perf power PMU in " + sys +
                  "/bus/event_source/devices/power\n"
                  "warning backend temperature not available: no thermal zone in " +
                  sys + "/class/thermal and no temperature input in " + sys +
                  "/class/hwmon\n"
                  "warning backend infiniband not available: no InfiniBand port counters in " +
                  sys + "/class/infiniband\n" + "warning backend lustre not available: no Lustre client mount (" +
                  tree.path("proc").string() + "/fs/lustre/llite, " + sys + "/kernel/debug/lustre/llite)\n");
}

TEST(NodeBackendsTest, every_backend_of_a_full_node_in_table_order_with_its_mapping_files)
{
    test::FakeTree tree;
    for (const char *f : {"node/intel-2s", "node/thermal", "node/infiniband", "node/lustre"})
        tree.copy_fixture(f);
    tree.mkdir("maps");
    auto request = all_of(tree);
    request.mapping_dirs = {{"rapl", tree.path("maps").string()}, {"temperature", tree.path("maps").string()}};
    LogCapture log;
    auto backends = node::make_node_backends(request, 1'764'678'000'000'000'000);
    ASSERT_EQ(backends.size(), 4u);
    EXPECT_EQ(backends[0]->name(), "rapl");
    EXPECT_EQ(backends[1]->name(), "temperature");
    EXPECT_EQ(backends[2]->name(), "infiniband");
    EXPECT_EQ(backends[3]->name(), "lustre");
    for (const auto &b : backends)
        EXPECT_EQ(b->scope(), wire::Scope::node);
    EXPECT_EQ(log.text().find("warning"), std::string::npos) << log.text();
    EXPECT_TRUE(std::filesystem::exists(tree.path("maps/RAPL_mapping.1764678000.000000.csv")));
    EXPECT_EQ(test::slurp(tree.path("maps/temperature_mapping.1764678000.000000.csv")).substr(0, 20),
              "counter_1, acpitz_0\n");
}

namespace {

// A perf counter holding its config as its count.
int config_perf_open(uint32_t, uint64_t config, int)
{
    int fd = memfd_create("perf", MFD_CLOEXEC);
    if (fd < 0 || pwrite(fd, &config, sizeof config, 0) != sizeof config)
        return -EIO;
    return fd;
}

}  // namespace

TEST(NodeBackendsTest, steady_state_samples_do_not_allocate)
{
    test::FakeTree tree;
    for (const char *f : {"node/intel-2s", "node/thermal", "node/infiniband", "node/lustre"})
        tree.copy_fixture(f);
    auto backends = node::make_node_backends(all_of(tree), 1);
    ASSERT_EQ(backends.size(), 4u);
    // Failures reported on the hot path do not allocate either.
    tree.write("sys/class/thermal/thermal_zone0/temp", "x\n");
    std::filesystem::remove(tree.path("proc/fs/lustre/llite/scratch-ffff8d1c3a7e5000/stats"));
    for (auto &b : backends) {
        std::vector<double> values(b->metrics().size());
        EXPECT_EQ(test::allocations_in_samples(*b, values), 0u) << b->name();
    }

    test::FakeTree perf;
    perf.copy_fixture("perfhw/sys/bus/event_source/devices/power", "sys/bus/event_source/devices/power");
    node::backends::rapl::RaplIo io;
    io.perf_open = &config_perf_open;
    io.perf_read = &test::memfd_perf_read;
    auto from_perf = node::backends::rapl::make_rapl(perf.path("sys"), io);
    ASSERT_TRUE(from_perf) << from_perf.error().message();
    std::vector<double> values((*from_perf)->metrics().size());
    EXPECT_EQ(test::allocations_in_samples(**from_perf, values), 0u) << "rapl (perf)";

    io = {};
    io.open_file = &test::deny_energy;
    auto denied = node::backends::rapl::make_rapl(tree.path("sys"), io);
    ASSERT_TRUE(denied) << denied.error().message();
    values.assign((*denied)->metrics().size(), 0);
    EXPECT_EQ(test::allocations_in_samples(**denied, values), 0u) << "rapl (permission)";
    EXPECT_NE((*denied)->status(), "");
}

TEST(NodeBackendsTest, a_backend_with_more_metrics_than_a_message_carries_is_left_out)
{
    test::FakeTree tree;
    // 43 Lustre mounts: 43 * 24 + 4 = 1036 metrics, above the protocol's 1024.
    for (int i = 0; i < 43; ++i)
        tree.write("proc/fs/lustre/llite/fs" + std::to_string(i) + "-ffff00000000" + std::to_string(1000 + i) +
                       "/stats",
                   "open 1 samples [regs]\n");
    node::NodeBackendRequest r;
    r.ctx = {tree.path("sys"), tree.path("proc")};
    r.enabled = {"lustre"};
    LogCapture log;
    EXPECT_TRUE(node::make_node_backends(r, 1).empty());
    EXPECT_EQ(log.text(), "warning backend lustre not available: 1036 metrics, more than the protocol's 1024 per "
                          "backend\n");
}
