// Hdf5Sink memory: row buffers, the cost of an open job, the memory budget
// under a flood of the largest messages, and pausing for free space.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "collector/sinks/hdf5/RowBuffer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class Hdf5SinkMemoryTest : public ::testing::Test {
protected:
    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("out");
};

// A backend block of n metrics named m<i>, value seed + i.
BackendBlock wide_block(const std::string &name, size_t n, double seed)
{
    std::vector<MetricDescriptor> metrics;
    std::vector<double> values;
    for (size_t i = 0; i < n; ++i) {
        metrics.push_back({"metric_number_" + std::to_string(i), "1", MetricKind::gauge});
        values.push_back(seed + static_cast<double>(i));
    }
    return block(name, std::move(metrics), std::move(values));
}

// Rows stored in every segment of every backend of a host.
uint64_t stored_rows(const Reader &r, const std::string &host, const std::vector<std::string> &backends)
{
    uint64_t rows = 0;
    const std::string host_dir = "/hosts/" + host + "/";
    for (const auto &b : backends) {
        const std::string prefix = (host_dir + b).append("/segment_");
        for (int seg = 0;; ++seg) {
            const std::string segment = prefix + std::to_string(seg);
            if (!r.exists(segment))
                break;
            rows += r.time(segment).size();
        }
    }
    return rows;
}

TEST(RowBufferTest, rows_span_blocks_and_copy_back_in_order)
{
    collector::hdf5::RowBuffer buffer(24);
    for (uint64_t i = 0; i < 1000; ++i) {
        const uint64_t row[3] = {i, i * 2, i * 3};
        std::memcpy(buffer.append(), row, sizeof row);
        ASSERT_LE(buffer.memory_bytes(), 64 + 2 * (i + 1) * 24 + collector::hdf5::RowBuffer::growth_bound(24));
    }
    EXPECT_EQ(buffer.rows(), 1000u);
    std::vector<uint64_t> out(size_t{3} * 1000);
    for (size_t first = 0; first < 1000; first += 77) {  // pieces, as a flush copies chunks
        const size_t count = std::min<size_t>(77, 1000 - first);
        buffer.copy(first, count, reinterpret_cast<unsigned char *>(out.data() + 3 * first));
    }
    for (uint64_t i = 0; i < 1000; ++i)
        ASSERT_EQ(out[3 * i + 2], i * 3) << i;
    buffer.copy(5, 1, reinterpret_cast<unsigned char *>(out.data()));  // back to an earlier row
    EXPECT_EQ(out[0], 5u);
    const size_t grown = buffer.memory_bytes();
    buffer.clear();
    EXPECT_EQ(buffer.rows(), 0u);
    EXPECT_LT(buffer.memory_bytes(), grown);
    EXPECT_GT(buffer.memory_bytes(), 0u) << "the first block is kept";
    buffer.release();
    EXPECT_EQ(buffer.memory_bytes(), 0u);
}

TEST(RowBufferTest, one_append_grows_memory_by_at_most_the_bound)
{
    for (size_t row_bytes : {size_t{8}, size_t{120}, size_t{8192}, size_t{300000}}) {
        collector::hdf5::RowBuffer buffer(row_bytes);
        for (int i = 0; i < 64; ++i) {
            const size_t before = buffer.memory_bytes();
            std::memset(buffer.append(), 1, row_bytes);
            ASSERT_LE(buffer.memory_bytes() - before, collector::hdf5::RowBuffer::growth_bound(row_bytes)) << row_bytes;
        }
    }
}

// 300 open jobs of 4 backends: the files close beyond max_open_files, the
// jobs stay open in memory, each a few KiB.
TEST_F(Hdf5SinkMemoryTest, an_open_job_costs_far_less_than_an_open_file)
{
    auto o = options(m_dir);
    o.max_open_files = 8;
    auto sink = make_sink(o);
    const int jobs = 300;
    int64_t mono = 1;
    for (int j = 0; j < jobs; ++j) {
        const std::string id = "job" + std::to_string(j);
        sink->consume(job_start(id, "n" + std::to_string(j), k_t0, "2"), at(++mono));
        sink->consume(message(MessageKind::sample, id, "n" + std::to_string(j), k_t0 + k_second,
                              {cpu_block(1, 1, 0), memory_block(1, 2), io_block(1, 2), processes_block(1, 2)}),
                      at(++mono));
    }
    auto stats = sink->stats();
    EXPECT_EQ(sink->open_jobs(), static_cast<size_t>(jobs));
    EXPECT_LE(sink->open_files(), 8u);
    const uint64_t per_job =
        (stats.memory_estimate_bytes - sink->open_files() * collector::Hdf5Sink::k_open_file_bytes) / jobs;
    EXPECT_LT(per_job, 128u * 1024) << "per open job";
    EXPECT_GT(per_job, 1000u) << "the estimate counts the jobs";
    sink->close_all();
    EXPECT_EQ(sink->stats().rows_written, jobs * 4u);
    Reader r(job_file(m_dir, "job7", JobFile::data));
    EXPECT_EQ(r.time("/hosts/n7/processes/segment_0").size(), 1u);
}

// The largest messages the protocol allows (38 backends of 1,024 metrics:
// ~300 KB of values each) to many jobs at once, round robin, under a small
// budget: the estimate never passes the budget and every row is stored.
TEST_F(Hdf5SinkMemoryTest, a_flood_of_the_largest_messages_stays_under_the_budget_and_every_row_is_stored)
{
    auto o = options(m_dir);
    o.memory_budget_bytes = 32ULL << 20;
    o.min_free_bytes = 0;
    o.batch_rows = 1000;
    auto sink = make_sink(o);
    const size_t backends = 38, metrics = wire::k_max_metrics_per_backend;
    const int jobs = 6, messages = 4;
    std::vector<std::string> names;
    for (size_t b = 0; b < backends; ++b)
        names.push_back("backend_" + std::to_string(b));
    int64_t mono = 1;
    for (int i = 0; i < messages; ++i)
        for (int j = 0; j < jobs; ++j) {
            auto m = message(MessageKind::sample, "flood" + std::to_string(j), "h", k_t0 + i * k_second);
            for (size_t b = 0; b < backends; ++b)
                m.backends.push_back(wide_block(names[b], metrics, 1000.0 * i + j));
            sink->consume(m, at(++mono));
            ASSERT_LE(sink->stats().memory_estimate_bytes, o.memory_budget_bytes) << "message " << i << " job " << j;
        }
    auto stats = sink->stats();
    EXPECT_LE(stats.memory_peak_bytes, o.memory_budget_bytes);
    EXPECT_GT(stats.budget_evictions, 0u) << "the budget made the sink write and close early";
    EXPECT_EQ(stats.rows_dropped, 0u);
    sink->close_all();
    EXPECT_EQ(sink->stats().write_errors, 0u);
    EXPECT_EQ(sink->stats().rows_written, static_cast<uint64_t>(jobs) * messages * backends);
    for (int j = 0; j < jobs; ++j) {
        Reader r(job_file(m_dir, "flood" + std::to_string(j), JobFile::data));
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(stored_rows(r, "h", names), static_cast<uint64_t>(messages * backends)) << j;
        size_t cols = 0;
        auto v = r.values("/hosts/h/backend_37/segment_0", &cols);
        ASSERT_EQ(cols, metrics);
        ASSERT_EQ(v.size(), messages * metrics);
        EXPECT_EQ(v[(messages - 1) * metrics + 1023], 1000.0 * (messages - 1) + j + 1023);
        EXPECT_FALSE(r.exists("/hosts/h/backend_37/segment_1")) << "reopened files continue their segments";
    }
}

// Writing paused (a probe says the disk is nearly full): rows wait in memory
// up to the budget, beyond which they are dropped, counted and, once writing
// resumes, recorded in the host's rows_dropped and the summary.
TEST_F(Hdf5SinkMemoryTest, while_writing_is_paused_rows_wait_up_to_the_budget_then_are_dropped_and_recorded)
{
    auto free_bytes = std::make_shared<std::atomic<uint64_t>>(1ULL << 40);
    auto o = options(m_dir);
    o.memory_budget_bytes = 16ULL << 20;
    o.min_free_bytes = 64ULL << 20;
    o.batch_rows = 64;
    o.free_bytes_probe = [free_bytes](const std::filesystem::path &) { return std::optional<uint64_t>(*free_bytes); };
    auto sink = make_sink(o);
    auto sample = [](int i) {
        return message(MessageKind::sample, "p", "h", k_t0 + i * k_second,
                       {wide_block("wide", 200, i), cpu_block(i, i, 0)});
    };
    sink->consume(job_start("p", "h", k_t0, "1"), at(1));
    int sent = 0;
    for (; sent < 100; ++sent)
        sink->consume(sample(sent + 1), at(2 + sent));
    const uint64_t before_pause = sink->stats().rows_written;
    EXPECT_GT(before_pause, 0u);

    *free_bytes = 10ULL << 20;          // below min_free_bytes
    const int paused_messages = 10000;  // ~16 MB of rows: more than the budget holds
    for (int i = 0; i < paused_messages; ++i, ++sent) {
        sink->consume(sample(sent + 1), at(2 + sent));
        ASSERT_LE(sink->stats().memory_estimate_bytes, o.memory_budget_bytes) << i;
    }
    sink->consume(message(MessageKind::job_end, "p", "h", k_t0 + (sent + 1) * k_second, {cpu_block(1, 1, 0)}),
                  at(2 + sent));
    auto paused = sink->stats();
    EXPECT_TRUE(paused.writing_paused);
    EXPECT_EQ(paused.write_pauses, 1u);
    EXPECT_EQ(paused.rows_written, before_pause) << "nothing written while paused";
    EXPECT_GT(paused.rows_dropped, 0u) << "beyond the budget, rows are dropped";
    EXPECT_LT(paused.rows_dropped, 2u * paused_messages) << "up to the budget, rows wait";
    EXPECT_EQ(sink->open_files(), 0u) << "files are closed while paused";
    EXPECT_EQ(paused.summaries_written, 0u);

    *free_bytes = 100ULL << 20;  // above min_free_bytes plus its margin
    sink->tick(3 + sent);
    auto resumed = sink->stats();
    EXPECT_FALSE(resumed.writing_paused);
    EXPECT_EQ(resumed.summaries_written, 1u) << "the job_end that came while paused";
    EXPECT_EQ(sink->open_jobs(), 0u);
    const uint64_t sent_rows = 2u * static_cast<uint64_t>(sent) + 1;  // two blocks per sample, one in job_end
    EXPECT_EQ(resumed.rows_written + resumed.rows_dropped, sent_rows);

    auto file = job_file(m_dir, "p", JobFile::data);
    Reader r(file);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(static_cast<uint64_t>(r.i64("/hosts/h", "rows_dropped")), resumed.rows_dropped);
    EXPECT_EQ(stored_rows(r, "h", {"wide", "cgroup_cpu"}), resumed.rows_written);
    r.close();
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->rows_dropped, resumed.rows_dropped);
}

}  // namespace
