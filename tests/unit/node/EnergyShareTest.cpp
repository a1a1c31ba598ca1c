// The job's share of the node's energy (node/energy): the split is exact
// (jobs plus idle make the node's energy), in the ratio of CPU time when
// the node is busy and of allocated CPUs when it idles; /proc/stat is
// parsed as the kernel writes it; the backend takes its inputs from the
// message, carries unknown intervals over, and counts on across a RAPL
// counter wrap (corrected by the rapl backend before it).
#include "FakeTree.hpp"
#include "node/energy/EnergyShareBackend.hpp"
#include "node/energy/EnergySplit.hpp"
#include "node/energy/ProcStat.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

using namespace colmet;
using namespace colmet::node::energy;

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

double sum(const EnergySplit &s)
{
    double total = s.idle_j;
    for (double j : s.jobs)
        total += j;
    return total;
}

}  // namespace

TEST(EnergySplit, jobs_and_idle_make_the_nodes_energy_exactly)
{
    std::mt19937 random(7);
    std::uniform_real_distribution<double> unit(0, 1);
    for (int i = 0; i < 1000; ++i) {
        const double cpus = 1 + std::floor(unit(random) * 128);
        const double seconds = 0.1 + unit(random) * 60;
        NodeInterval node{unit(random) * 1e5, seconds, unit(random) * cpus * seconds, cpus};
        std::vector<JobInterval> jobs(1 + random() % 8);
        for (auto &j : jobs)
            j = {unit(random) * node.busy_cpu_s / 2, std::floor(unit(random) * cpus / 2)};  // sums may pass N and C
        const EnergySplit s = split_energy(node, jobs);
        ASSERT_EQ(s.jobs.size(), jobs.size());
        EXPECT_NEAR(sum(s), node.energy_j, 1e-9 * node.energy_j) << i;
        for (double j : s.jobs)
            EXPECT_GE(j, 0);
        EXPECT_GE(s.idle_j, -1e-9 * node.energy_j);
    }
}

TEST(EnergySplit, a_busy_node_splits_by_cpu_time_an_idle_one_by_allocation)
{
    // Fully busy (u = 1): 3:1 in CPU time is 3:1 in energy, whatever the allocation.
    EnergySplit busy = split_energy({400, 10, 20, 2}, std::vector<JobInterval>{{15, 1}, {5, 1}});
    EXPECT_DOUBLE_EQ(busy.utilisation, 1);
    EXPECT_DOUBLE_EQ(busy.jobs[0], 300);
    EXPECT_DOUBLE_EQ(busy.jobs[1], 100);
    EXPECT_DOUBLE_EQ(busy.idle_j, 0);
    // Idle (u = 0): the baseline by allocated CPUs; unallocated CPUs are idle.
    EnergySplit idle = split_energy({400, 10, 0, 4}, std::vector<JobInterval>{{0, 3}, {0, 0}});
    EXPECT_DOUBLE_EQ(idle.jobs[0], 300);
    EXPECT_DOUBLE_EQ(idle.jobs[1], 0);
    EXPECT_DOUBLE_EQ(idle.idle_j, 100);
    // Half busy, one job of 2 CPUs using 1 of the 4: 0.5 x 400 x 2/4 + 0.5 x 400 x 10/20.
    EnergySplit half = split_energy({400, 10, 20, 4}, std::vector<JobInterval>{{10, 2}});
    EXPECT_DOUBLE_EQ(half.utilisation, 0.5);
    EXPECT_DOUBLE_EQ(half.jobs[0], 200);
    EXPECT_DOUBLE_EQ(half.idle_j, 200) << "the other 2 CPUs' baseline and the 10 s of CPU outside the job";
    // Unknown energy: NaN shares.
    EXPECT_TRUE(std::isnan(split_energy({k_nan, 10, 20, 4}, std::vector<JobInterval>{{10, 2}}).jobs[0]));
}

TEST(ProcStat, parses_the_busy_time_and_the_cpus)
{
    const std::string text = "cpu  100 5 50 1000 20 3 2 10 7 0\n"
                             "cpu0 50 2 25 500 10 1 1 5 3 0\n"
                             "cpu1 50 3 25 500 10 2 1 5 4 0\n"
                             "intr 12345\nctxt 6789\n";
    CpuTimes t;
    ASSERT_TRUE(parse_proc_stat(text, 100, t));
    EXPECT_DOUBLE_EQ(t.busy_s, (100 + 5 + 50 + 3 + 2 + 10) / 100.0) << "idle and iowait are not busy";
    EXPECT_DOUBLE_EQ(t.cpus, 2);
    EXPECT_FALSE(parse_proc_stat("intr 1\n", 100, t));
    EXPECT_FALSE(parse_proc_stat("cpu  1 2 x\ncpu0 1\n", 100, t));
    EXPECT_FALSE(parse_proc_stat("", 100, t));
}

namespace {

class EnergyShareBackendTest : public ::testing::Test {
protected:
    // /proc/stat of a 4-CPU node whose busy time is `busy_s`.
    void set_busy(double busy_s)
    {
        std::ofstream(m_tree.path("proc") / "stat")
            << "cpu  " << static_cast<long>(busy_s * 100) << " 0 0 999999 0 0 0 0 0 0\n"
            << "cpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\ncpu2 0 0 0 0 0 0 0 0 0 0\n"
            << "cpu3 0 0 0 0 0 0 0 0 0 0\n";
    }

    // A message at `t_s` with the rapl block (cumulative J) and the job's CPU usage.
    static wire::Message message(double t_s, double energy_j, double usage_s, std::string cpus = "")
    {
        wire::Message m;
        m.time_ns = static_cast<int64_t>(t_s * 1e9);
        wire::BackendBlock cpu;
        cpu.name = "cgroup_cpu";
        cpu.metrics = {{"usage", "s", wire::MetricKind::counter}};
        cpu.values = {usage_s};
        wire::BackendBlock rapl;
        rapl.name = "rapl";
        rapl.scope = wire::Scope::node;
        rapl.metrics = k_rapl;
        rapl.values = {energy_j};
        m.backends = {cpu, rapl};
        if (!cpus.empty())
            m.meta = {{"cpus", cpus}};
        return m;
    }

    std::vector<double> sample(EnergyShareBackend &b, const wire::Message &m)
    {
        std::vector<double> v(b.metrics().size());
        b.sample_from(m, v);
        return v;
    }

    static inline const std::vector<wire::MetricDescriptor> k_rapl{
        {"package_0_package", "J", wire::MetricKind::counter}};
    test::FakeTree m_tree;
};

}  // namespace

TEST_F(EnergyShareBackendTest, counts_the_jobs_share_interval_by_interval)
{
    std::filesystem::create_directories(m_tree.path("proc"));
    set_busy(1000);
    EnergyShareBackend b(k_rapl, m_tree.path("proc"));
    ASSERT_TRUE(b.reads_message());
    ASSERT_EQ(b.metrics().size(), 5u);
    EXPECT_EQ(b.metrics()[0].name, "package_0_package");
    EXPECT_EQ(b.metrics()[0].unit, "J");
    auto v = sample(b, message(100, 50, 0, "2"));
    EXPECT_EQ(v[0], 0) << "nothing yet";
    EXPECT_EQ(v[2], 4) << "node_cpus";
    EXPECT_EQ(b.status(), "");
    // 10 s, 400 J, the node 20 CPU-s busy (u = 0.5), the job 10 of them on
    // 2 of the 4 CPUs: 0.5 x 400 x 2/4 + 0.5 x 400 x 10/20 = 200 J.
    set_busy(1020);
    v = sample(b, message(110, 450, 10));
    EXPECT_NEAR(v[0], 200, 1e-9);
    EXPECT_NEAR(v[1], 1020, 1e-9) << "node_busy_cpu";
    EXPECT_NEAR(v[3], 0.5, 1e-12) << "utilisation";
    // The energy is unknown for a sample: NaN then, and the next interval
    // spans both (20 s, 400 J, u = 0: the baseline by allocation).
    v = sample(b, message(120, k_nan, 10));
    EXPECT_TRUE(std::isnan(v[0]));
    v = sample(b, message(130, 850, 10));
    EXPECT_NEAR(v[0], 200 + 400 * 2.0 / 4, 1e-9);
}

TEST_F(EnergyShareBackendTest, a_job_without_its_cpu_time_or_cpus_says_so)
{
    std::filesystem::create_directories(m_tree.path("proc"));
    set_busy(0);
    EnergyShareBackend b(k_rapl, m_tree.path("proc"));
    auto v = sample(b, message(100, 50, k_nan));
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_NE(b.status().find("cgroup_cpu usage"), std::string_view::npos) << b.status();
    EXPECT_NE(b.status().find("CPUs are unknown"), std::string_view::npos) << b.status();
    EnergyShareBackend no_proc(k_rapl, m_tree.path("no-proc"));
    v = sample(no_proc, message(100, 50, 1, "1"));
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_NE(no_proc.status().find("stat"), std::string_view::npos) << no_proc.status();
}
