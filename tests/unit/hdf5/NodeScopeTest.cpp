// Node scope in the HDF5 sink: the scope attribute of node backends, the
// other jobs that shared a host (overlapping_jobs) and the RAPL energy of
// the summary.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "collector/sinks/hdf5/NodeSharing.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

BackendBlock rapl_block(double pkg0, double dram0, double core0)
{
    return block("rapl",
                 {{"package_0_package", "J", MetricKind::counter},
                  {"package_0_dram", "J", MetricKind::counter},
                  {"package_0_core", "J", MetricKind::counter}},
                 {pkg0, dram0, core0}, wire::Scope::node);
}

class NodeScopeTest : public ::testing::Test {
protected:
    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("out");
};

} // namespace

TEST(NodeSharingTest, overlaps_by_time_not_by_arrival)
{
    collector::hdf5::NodeSharing s;
    const int64_t t = k_t0;
    EXPECT_TRUE(s.observe("n1", "A", MessageKind::job_start, t).empty());
    EXPECT_TRUE(s.observe("n1", "A", MessageKind::job_end, t + 10 * k_second).empty());
    // B starts after A ended: no overlap.
    EXPECT_TRUE(s.observe("n1", "B", MessageKind::job_start, t + 11 * k_second).empty());
    // C's start arrives late but it started while A ran.
    auto found = s.observe("n1", "C", MessageKind::job_start, t + 5 * k_second);
    using P = std::pair<std::string, std::string>;
    EXPECT_EQ(found, (std::vector<P>{{"C", "A"}, {"A", "C"}, {"C", "B"}, {"B", "C"}}));
    // Reported once.
    EXPECT_TRUE(s.observe("n1", "C", MessageKind::sample, t + 12 * k_second).empty());
    // Another host is another node.
    EXPECT_TRUE(s.observe("n2", "D", MessageKind::job_start, t + 5 * k_second).empty());
    EXPECT_EQ(s.tracked("n1"), 3u);
    s.forget("A");
    EXPECT_EQ(s.tracked("n1"), 2u);
}

TEST_F(NodeScopeTest, jobs_sharing_a_host_name_each_other_and_a_job_elsewhere_names_none)
{
    auto sink = make_sink(options(m_dir));
    // 1 and 2 overlap on node-1; 3 runs on node-2 at the same time.
    sink->consume(job_start("1", "node-1", k_t0, "2"), at(1));
    sink->consume(job_start("3", "node-2", k_t0 + k_second, "2"), at(2));
    sink->consume(job_start("2", "node-1", k_t0 + 2 * k_second, "2"), at(3));
    sink->consume(message(MessageKind::job_end, "1", "node-1", k_t0 + 4 * k_second), at(4));
    sink->consume(message(MessageKind::job_end, "2", "node-1", k_t0 + 5 * k_second), at(5));
    sink->consume(message(MessageKind::job_end, "3", "node-2", k_t0 + 5 * k_second), at(6));
    // 4 starts on node-1 after both ended: alone.
    sink->consume(job_start("4", "node-1", k_t0 + 6 * k_second, "2"), at(7));
    sink->consume(message(MessageKind::job_end, "4", "node-1", k_t0 + 7 * k_second), at(8));
    sink->close_all();
    EXPECT_EQ(sink->stats().write_errors, 0u);

    auto attr = [&](const std::string &job, const std::string &host) {
        collector::hdf5::File f{H5Fopen(collector::job_file_path(m_dir, job).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)};
        collector::hdf5::Group group{H5Gopen2(f.get(), ("/hosts/" + host).c_str(), H5P_DEFAULT)};
        EXPECT_TRUE(group.valid()) << job << " " << host;
        if (!collector::hdf5::attr_exists(group.get(), "overlapping_jobs"))
            return std::vector<std::string>{};
        auto v = collector::hdf5::read_strs_attr(group.get(), "overlapping_jobs");
        return v ? *v : std::vector<std::string>{"<unreadable>"};
    };
    EXPECT_EQ(attr("1", "node-1"), std::vector<std::string>{"2"});
    EXPECT_EQ(attr("2", "node-1"), std::vector<std::string>{"1"});
    EXPECT_EQ(attr("3", "node-2"), std::vector<std::string>{});
    EXPECT_EQ(attr("4", "node-1"), std::vector<std::string>{});
}

TEST_F(NodeScopeTest, an_overlap_learned_after_a_job_ended_reaches_its_closed_file)
{
    auto sink = make_sink(options(m_dir));
    sink->consume(job_start("1", "node-1", k_t0, "2"), at(1));
    sink->consume(message(MessageKind::job_end, "1", "node-1", k_t0 + 10 * k_second), at(2));
    EXPECT_EQ(sink->open_files(), 0u);
    // Job 2 started during job 1 but its first message arrives now.
    sink->consume(job_start("2", "node-1", k_t0 + 3 * k_second, "2"), at(3));
    sink->close_all();
    Reader r(collector::job_file_path(m_dir, "1"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.strings("/hosts/node-1", "overlapping_jobs"), std::vector<std::string>{"2"});
    Reader r2(collector::job_file_path(m_dir, "2"));
    EXPECT_EQ(r2.strings("/hosts/node-1", "overlapping_jobs"), std::vector<std::string>{"1"});
}

TEST_F(NodeScopeTest, node_backends_are_marked_and_the_summary_has_the_energy)
{
    auto sink = make_sink(options(m_dir));
    auto start = job_start("7", "node-1", k_t0, "2");
    start.backends = {rapl_block(0.5, 0.25, 0.1)};
    sink->consume(start, at(1));
    sink->consume(message(MessageKind::sample, "7", "node-1", k_t0 + k_second, {rapl_block(100.5, 10.25, 50)}), at(2));
    // node-2 has RAPL too; its sampler restarted (the counter went back to 0).
    auto start2 = job_start("7", "node-2", k_t0, "2");
    start2.backends = {rapl_block(0, 0, 0)};
    sink->consume(start2, at(3));
    sink->consume(message(MessageKind::sample, "7", "node-2", k_t0 + k_second, {rapl_block(30, 3, 1)}), at(4));
    sink->consume(message(MessageKind::sample, "7", "node-2", k_t0 + 2 * k_second, {rapl_block(5, 1, 1)}), at(5));
    sink->consume(message(MessageKind::job_end, "7", "node-2", k_t0 + 3 * k_second, {rapl_block(6, 2, 1)}), at(6));
    sink->consume(message(MessageKind::job_end, "7", "node-1", k_t0 + 3600 * k_second, {rapl_block(3600.5, 360.25, 9)}),
                  at(7));
    sink->close_all();
    auto file = collector::job_file_path(m_dir, "7");
    {
        Reader r(file);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r.string("/hosts/node-1/rapl", "scope"), "node");
    }
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s) << s.error().message();
    // node-1: package 3600 J + dram 360 J; node-2: 30 + 6 J package (restart adds from 0), 3 + 2 J dram.
    EXPECT_DOUBLE_EQ(s->energy_j, 3600 + 360 + 36 + 5);
}

TEST_F(NodeScopeTest, no_rapl_means_unknown_energy)
{
    auto sink = make_sink(options(m_dir));
    sink->consume(job_start("8", "node-1", k_t0, "2"), at(1));
    sink->consume(message(MessageKind::job_end, "8", "node-1", k_t0 + k_second, {cpu_block(1, 1, 0)}), at(2));
    sink->close_all();
    auto s = collector::read_job_summary(collector::job_file_path(m_dir, "8"));
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_TRUE(std::isnan(s->energy_j));
}

TEST_F(NodeScopeTest, a_restarted_collector_rebuilds_the_energy_and_overlaps_from_the_file)
{
    {
        auto sink = make_sink(options(m_dir));
        auto start = job_start("9", "node-1", k_t0, "2");
        start.backends = {rapl_block(0, 0, 0)};
        sink->consume(start, at(1));
        sink->consume(job_start("10", "node-1", k_t0 + k_second, "2"), at(2));
        sink->consume(message(MessageKind::sample, "9", "node-1", k_t0 + 2 * k_second, {rapl_block(40, 4, 1)}), at(3));
        sink->close_all();  // the collector stops; job 9 goes on
    }
    auto sink = make_sink(options(m_dir));
    sink->consume(message(MessageKind::job_end, "9", "node-1", k_t0 + 3 * k_second, {rapl_block(50, 5, 1)}), at(4));
    sink->close_all();
    auto file = collector::job_file_path(m_dir, "9");
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_DOUBLE_EQ(s->energy_j, 55);
    Reader r(file);
    EXPECT_EQ(r.strings("/hosts/node-1", "overlapping_jobs"), std::vector<std::string>{"10"});
}
