// Several collectors writing into one directory: each file names the
// collector that writes it (root attribute "collector", Hdf5Options::writer),
// and a sink never writes into a file that names another collector.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class Hdf5SharedDirTest : public ::testing::Test {
protected:
    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("shared");

    std::unique_ptr<collector::Hdf5Sink> sink(const std::string &writer)
    {
        auto o = options(m_dir);
        o.writer = writer;
        return make_sink(o);
    }
};

std::string bytes_of(const std::filesystem::path &file)
{
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// job_start, `n` samples and job_end from `host`, starting at the t-th second.
void run_job(collector::Hdf5Sink &sink, const std::string &job, const std::string &host, int t, int n)
{
    sink.consume(job_start(job, host, k_t0 + t * k_second, "2"), at(t * k_second));
    for (int i = 1; i <= n; ++i)
        sink.consume(message(MessageKind::sample, job, host, k_t0 + (t + i) * k_second, {cpu_block(i, i, 0)}),
                     at((t + i) * k_second));
    sink.consume(message(MessageKind::job_end, job, host, k_t0 + (t + n + 1) * k_second, {cpu_block(n + 1, n, 0)}),
                 at((t + n + 1) * k_second));
}

TEST_F(Hdf5SharedDirTest, a_file_names_its_collector_and_another_collector_leaves_it_alone)
{
    auto a = sink("A");
    run_job(*a, "7", "h1", 0, 5);
    const auto file = job_file(m_dir, "7", JobFile::data);
    {
        Reader r(file);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r.string("/", "collector"), "A");
    }
    const std::string before = bytes_of(file);
    const auto listing = [&] {
        std::set<std::filesystem::path> names;
        for (const auto &e : std::filesystem::directory_iterator(m_dir))
            names.insert(e.path().filename());
        return names;
    };
    const auto before_b = listing();
    EXPECT_EQ(before_b, (std::set<std::filesystem::path>{"7.h5", "7.json"})) << "A's file and its summary";

    // The same job reaches collector B (a node with another list).
    auto b = sink("B");
    run_job(*b, "7", "h2", 10, 5);
    b->close_all();
    const auto stats = b->stats();
    EXPECT_GE(stats.files_foreign, 1u);
    EXPECT_EQ(stats.write_errors, 0u) << "a foreign file is not a write error";
    EXPECT_GE(stats.messages_dropped, 7u);
    EXPECT_EQ(stats.files_opened, 0u);
    EXPECT_EQ(bytes_of(file), before) << "B wrote into A's file";
    EXPECT_EQ(listing(), before_b) << "nothing set aside, nothing created";

    // A, restarted under its name, still appends to its file.
    a->close_all();
    a = sink("A");
    run_job(*a, "7", "h3", 20, 3);
    a->close_all();
    EXPECT_EQ(a->stats().files_foreign, 0u);
    Reader r(file);
    EXPECT_TRUE(r.exists("/hosts/h1"));
    EXPECT_FALSE(r.exists("/hosts/h2"));
    EXPECT_EQ(r.time("/hosts/h3/cgroup_cpu/segment_0").size(), 4u);
    EXPECT_EQ(r.string("/", "collector"), "A");
}

TEST_F(Hdf5SharedDirTest, a_file_without_a_collector_becomes_the_first_openers)
{
    {
        auto old = sink("");  // as colmet before the attribute existed
        run_job(*old, "8", "h1", 0, 2);
    }
    const auto file = job_file(m_dir, "8", JobFile::data);
    {
        Reader r(file);
        EXPECT_FALSE(r.has_attr("/", "collector"));
    }
    auto a = sink("A");
    run_job(*a, "8", "h2", 10, 2);
    a->close_all();
    {
        Reader r(file);
        EXPECT_EQ(r.string("/", "collector"), "A");
        EXPECT_TRUE(r.exists("/hosts/h1"));
        EXPECT_TRUE(r.exists("/hosts/h2"));
    }
    auto b = sink("B");
    run_job(*b, "8", "h3", 20, 2);
    EXPECT_GE(b->stats().files_foreign, 1u);
}

TEST_F(Hdf5SharedDirTest, two_collectors_write_their_own_jobs_side_by_side)
{
    auto a = sink("A");
    auto b = sink("B");
    for (int j = 0; j < 10; ++j) {
        auto &s = j % 2 ? *b : *a;
        run_job(s, "job" + std::to_string(j), "h", j, 3);
    }
    a->close_all();
    b->close_all();
    for (int j = 0; j < 10; ++j) {
        Reader r(job_file(m_dir, "job" + std::to_string(j), JobFile::data));
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r.string("/", "collector"), j % 2 ? "B" : "A");
        EXPECT_EQ(r.time("/hosts/h/cgroup_cpu/segment_0").size(), 4u);
    }
    EXPECT_EQ(a->stats().files_foreign + b->stats().files_foreign, 0u);
}

}  // namespace
