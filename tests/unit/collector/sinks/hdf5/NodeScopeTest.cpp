// Node scope in the HDF5 sink: the scope attribute of node backends, the
// other jobs that shared a host (overlapping_jobs) and the RAPL energy of
// the summary.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "collector/sinks/hdf5/NodeSharing.hpp"

#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace

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

TEST(NodeSharingTest, ended_intervals_kept_per_host_are_bounded)
{
    collector::hdf5::NodeSharing s;
    using collector::hdf5::NodeSharing;
    // 1,000 jobs one after the other on one host: what a new job compares
    // itself with does not grow with the host's history.
    for (int j = 0; j < 1000; ++j) {
        const std::string id = "j" + std::to_string(j);
        s.observe("n1", id, MessageKind::job_start, k_t0 + j * k_second);
        s.observe("n1", id, MessageKind::job_end, k_t0 + j * k_second + k_second / 2);
    }
    EXPECT_LE(s.tracked("n1"), NodeSharing::k_max_ended);
    const size_t bytes = s.memory_bytes();
    for (int j = 1000; j < 2000; ++j) {
        const std::string id = "j" + std::to_string(j);
        s.observe("n1", id, MessageKind::job_start, k_t0 + j * k_second);
        s.observe("n1", id, MessageKind::job_end, k_t0 + j * k_second + k_second / 2);
    }
    EXPECT_LE(s.memory_bytes(), bytes + 1024) << "memory does not grow with the number of jobs seen";
    // A job still open is kept, whatever ended after it.
    s.observe("n1", "long", MessageKind::job_start, k_t0);
    for (int j = 2000; j < 2200; ++j) {
        const std::string id = "j" + std::to_string(j);
        s.observe("n1", id, MessageKind::job_start, k_t0 + j * k_second);
        s.observe("n1", id, MessageKind::job_end, k_t0 + j * k_second + k_second / 2);
    }
    auto found = s.observe("n1", "late", MessageKind::job_start, k_t0 + 3000 * k_second);
    using P = std::pair<std::string, std::string>;
    EXPECT_NE(std::find(found.begin(), found.end(), P{"late", "long"}), found.end());
    s.forget("long");
    s.forget("late");
    EXPECT_LE(s.tracked("n1"), NodeSharing::k_max_ended);
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
        collector::hdf5::File f{H5Fopen(job_file(m_dir, job, JobFile::data).c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)};
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

TEST_F(NodeScopeTest, an_overlap_learned_after_a_job_ended_waits_until_its_file_is_opened_again)
{
    auto sink = make_sink(options(m_dir));
    sink->consume(job_start("1", "node-1", k_t0, "2"), at(1));
    sink->consume(message(MessageKind::job_end, "1", "node-1", k_t0 + 10 * k_second), at(2));
    EXPECT_EQ(sink->open_files(), 0u);
    // Job 2 started during job 1 but its first message arrives now: job 1's
    // file is not reopened for it.
    sink->consume(job_start("2", "node-1", k_t0 + 3 * k_second, "2"), at(3));
    EXPECT_EQ(sink->stats().files_opened, 2u);
    sink->tick(4);
    EXPECT_EQ(sink->stats().files_opened, 2u);
    {
        Reader r(job_file(m_dir, "1", JobFile::data));
        ASSERT_TRUE(r.ok());
        EXPECT_FALSE(r.has_attr("/hosts/node-1", "overlapping_jobs"));
    }
    // A late message of job 1 opens its file: the pending overlap goes in.
    sink->consume(message(MessageKind::sample, "1", "node-1", k_t0 + 9 * k_second, {cpu_block(1, 1, 0)}), at(5));
    sink->close_all();
    Reader r(job_file(m_dir, "1", JobFile::data));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.strings("/hosts/node-1", "overlapping_jobs"), std::vector<std::string>{"2"});
    Reader r2(job_file(m_dir, "2", JobFile::data));
    EXPECT_EQ(r2.strings("/hosts/node-1", "overlapping_jobs"), std::vector<std::string>{"1"});
}

TEST_F(NodeScopeTest, a_pending_overlap_of_a_forgotten_job_is_dropped)
{
    auto o = options(m_dir);
    o.idle_close_s = 60;
    auto sink = make_sink(o);
    sink->consume(job_start("1", "node-1", k_t0, "2"), at(1));
    sink->consume(message(MessageKind::job_end, "1", "node-1", k_t0 + 10 * k_second), at(2));
    sink->consume(job_start("2", "node-1", k_t0 + 3 * k_second, "2"), at(3));
    sink->tick(100 * k_second);  // job 1 silent for 60 s: forgotten with its pending overlap
    sink->consume(message(MessageKind::sample, "1", "node-1", k_t0 + 9 * k_second, {cpu_block(1, 1, 0)}),
                  at(101 * k_second));
    sink->close_all();
    Reader r(job_file(m_dir, "1", JobFile::data));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r.has_attr("/hosts/node-1", "overlapping_jobs"));
}

// 600 jobs on one host: each job's start opens its own file once, never
// another job's (recording overlaps used to reopen every closed file).
TEST_F(NodeScopeTest, six_hundred_jobs_on_one_host_open_each_file_once)
{
    auto sink = make_sink(options(m_dir));
    const int jobs = 600;
    int64_t mono = 1;
    for (int j = 0; j < jobs; ++j) {
        const std::string id = std::to_string(1000 + j);
        sink->consume(job_start(id, "fat-node", k_t0 + j * k_second, "1"), at(++mono));
        sink->consume(message(MessageKind::sample, id, "fat-node", k_t0 + (j + 1) * k_second, {cpu_block(j, j, 0)}),
                      at(++mono));
    }
    auto stats = sink->stats();
    EXPECT_EQ(stats.files_opened, static_cast<uint64_t>(jobs)) << "no file was opened twice";
    EXPECT_EQ(stats.write_errors, 0u);
    EXPECT_LE(stats.memory_estimate_bytes, collector::Hdf5Options{}.memory_budget_bytes);
    sink->close_all();
    for (int j : {0, 299, 599}) {
        Reader r(job_file(m_dir, std::to_string(1000 + j), JobFile::data));
        ASSERT_TRUE(r.ok());
        auto others = r.strings("/hosts/fat-node", "overlapping_jobs");
        EXPECT_EQ(others.size(), static_cast<size_t>(jobs - 1)) << j;
    }
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
    auto file = job_file(m_dir, "7", JobFile::data);
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
    auto s = collector::read_job_summary(job_file(m_dir, "8", JobFile::data));
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
    auto file = job_file(m_dir, "9", JobFile::data);
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_DOUBLE_EQ(s->energy_j, 55);
    Reader r(file);
    EXPECT_EQ(r.strings("/hosts/node-1", "overlapping_jobs"), std::vector<std::string>{"10"});
}
