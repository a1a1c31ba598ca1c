// Hdf5Sink: layout, exact values, summary, segments, batching.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class Hdf5SinkTest : public ::testing::Test {
protected:
    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("out");
};

const std::string k_cpu0 = "/hosts/node-1/cgroup_cpu/segment_0";
const std::string k_mem0 = "/hosts/node-1/cgroup_memory/segment_0";

double peak_of(int i) { return i % 7 == 0 ? k_nan : 2e6 + i; }

TEST_F(Hdf5SinkTest, writes_a_job_and_reads_it_back_exactly)
{
    auto o = options(m_dir);
    o.batch_rows = 256;
    auto sink = make_sink(o);
    const std::string job = "123.0";
    sink->consume(job_start(job, "node-1", k_t0, "4"), at(1));
    for (int i = 0; i < 1000; ++i)
        sink->consume(message(MessageKind::sample, job, "node-1", k_t0 + (i + 1) * k_second,
                              {cpu_block(2.0 * i, 1.5 * i, 0.5 * i), memory_block(1e6 + i, peak_of(i))}),
                      at(2 + i));
    EXPECT_EQ(sink->open_files(), 1u);
    sink->consume(message(MessageKind::job_end, job, "node-1", k_t0 + 1001 * k_second,
                          {cpu_block(2000, 1500, 500), memory_block(5e5, k_nan)}),
                  at(5000));
    auto stats = sink->stats();
    EXPECT_EQ(sink->open_files(), 0u) << "the file closes when its only host has ended";
    EXPECT_EQ(stats.files_opened, 1u);
    EXPECT_EQ(stats.files_closed, 1u);
    EXPECT_EQ(stats.write_errors, 0u);
    EXPECT_EQ(stats.rows_written, 2 * 1001u);
    // 1001 rows per segment in batches of 256: 256, 512, 768, job end.
    EXPECT_EQ(stats.write_batches, 2 * 4u);
    EXPECT_LE(stats.write_batches / 2, 5u);

    auto file = job_file(m_dir, job, JobFile::data);
    EXPECT_EQ(file, m_dir / "123.0.h5");
    Reader r(file);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.i64("/", "colmet_layout_version"), 1);
    EXPECT_EQ(r.string("/", "job_id"), job);
    EXPECT_GT(r.i64("/", "created_ns"), 0);

    const std::string host = "/hosts/node-1";
    EXPECT_EQ(r.string(host, "hostname"), "node-1");
    EXPECT_EQ(r.string(host, "sender"), "node-1:1234");
    EXPECT_EQ(r.string(host, "user"), "alice");
    EXPECT_EQ(r.string(host, "cgroup"), "/oar/alice_123.0");
    EXPECT_EQ(r.string(host, "cpus"), "4");
    EXPECT_EQ(r.string(host, "period"), "1");
    EXPECT_EQ(r.string(host, "command"), "sleep 100");
    EXPECT_EQ(r.i64(host, "samples_received"), 1002);  // job_start, 1000 samples, job_end
    EXPECT_EQ(r.i64(host, "samples_lost"), 0);
    EXPECT_EQ(r.i64(host, "first_ns"), k_t0);
    EXPECT_EQ(r.i64(host, "last_ns"), k_t0 + 1001 * k_second);
    EXPECT_EQ(r.i64(host, "job_start_ns"), k_t0);
    EXPECT_EQ(r.i64(host, "job_end_ns"), k_t0 + 1001 * k_second);

    EXPECT_EQ(r.string(host + "/cgroup_cpu", "scope"), "job");
    EXPECT_EQ(r.i64(host + "/cgroup_cpu", "segments"), 1);
    EXPECT_EQ(r.strings(k_cpu0, "names"), (std::vector<std::string>{"usage", "user", "system"}));
    EXPECT_EQ(r.strings(k_cpu0, "units"), (std::vector<std::string>{"s", "s", "s"}));
    EXPECT_EQ(r.strings(k_cpu0, "kinds"), (std::vector<std::string>{"counter", "counter", "counter"}));
    EXPECT_EQ(r.strings(k_mem0, "kinds"), (std::vector<std::string>{"gauge", "gauge"}));
    EXPECT_EQ(r.i64(k_cpu0, "started_ns"), k_t0 + k_second);
    EXPECT_FALSE(r.exists(host + "/cgroup_cpu/segment_1"));

    auto time = r.time(k_cpu0);
    ASSERT_EQ(time.size(), 1001u);
    for (int i = 0; i < 1001; ++i)
        ASSERT_EQ(time[static_cast<size_t>(i)], k_t0 + (i + 1) * k_second) << i;
    size_t cols = 0;
    auto cpu = r.values(k_cpu0, &cols);
    ASSERT_EQ(cols, 3u);
    ASSERT_EQ(cpu.size(), 1001u * 3);
    for (size_t i = 0; i < 1000; ++i) {
        ASSERT_EQ(cpu[i * 3 + 0], 2.0 * static_cast<double>(i));
        ASSERT_EQ(cpu[i * 3 + 1], 1.5 * static_cast<double>(i));
        ASSERT_EQ(cpu[i * 3 + 2], 0.5 * static_cast<double>(i));
    }
    EXPECT_EQ(cpu[size_t{1000} * 3], 2000.0);
    auto mem = r.values(k_mem0, &cols);
    ASSERT_EQ(cols, 2u);
    for (int i = 0; i < 1000; ++i) {
        auto row = static_cast<size_t>(i);
        ASSERT_EQ(mem[row * 2], 1e6 + i);
        ASSERT_TRUE(same(mem[row * 2 + 1], peak_of(i))) << "row " << i << " NaN must be kept";
    }
    EXPECT_TRUE(std::isnan(mem[1000 * 2 + 1]));

    r.close();
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->job_id, job);
    EXPECT_EQ(s->file, file);
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 2000);
    EXPECT_DOUBLE_EQ(s->user_time_s, 1500);
    EXPECT_DOUBLE_EQ(s->system_time_s, 500);
    EXPECT_DOUBLE_EQ(s->duration_s, 1001);
    EXPECT_DOUBLE_EQ(s->cpus, 4);
    EXPECT_DOUBLE_EQ(s->cpu_efficiency, 2000.0 / (1001.0 * 4));
    EXPECT_DOUBLE_EQ(s->peak_memory_bytes, 2e6 + 999);
    EXPECT_TRUE(std::isnan(s->read_bytes)) << "no cgroup_io backend: unknown, not 0";
    EXPECT_TRUE(std::isnan(s->read_chars));
    EXPECT_EQ(s->samples_received, 1002u);
    EXPECT_EQ(s->samples_lost, 0u);
    EXPECT_EQ(s->hosts, 1u);
    EXPECT_EQ(s->started_ns, k_t0);
    EXPECT_EQ(s->ended_ns, k_t0 + 1001 * k_second);
}

TEST_F(Hdf5SinkTest, summary_sums_two_hosts_and_closes_after_the_last_job_end)
{
    auto sink = make_sink(options(m_dir));
    const std::string job = "77";
    sink->consume(job_start(job, "a", k_t0, "4"), at(1));
    sink->consume(job_start(job, "b", k_t0 + k_second, "2"), at(2));
    for (int i = 1; i <= 10; ++i) {
        sink->consume(message(MessageKind::sample, job, "a", k_t0 + i * k_second,
                              {cpu_block(10.0 * i, 8.0 * i, 2.0 * i), memory_block(i == 5 ? 3e9 : 1e9, k_nan),
                               io_block(10.0 * i, 20.0 * i), processes_block(i, 2.0 * i)}),
                      at(10 + i));
        sink->consume(message(MessageKind::sample, job, "b", k_t0 + i * k_second,
                              {cpu_block(5.0 * i, 5.0 * i, 0), memory_block(1e9, i == 3 ? 2e9 : 1.5e9),
                               io_block(100.0 * i, 200.0 * i), processes_block(0.5 * i, 0.7 * i)}),
                      at(10 + i, i == 4 ? 3 : 0));
    }
    sink->consume(
        message(MessageKind::job_end, job, "a", k_t0 + 100 * k_second,
                {cpu_block(100, 80, 20), memory_block(1e9, k_nan), io_block(100, 200), processes_block(10, 20)}),
        at(100));
    EXPECT_EQ(sink->open_files(), 1u) << "host b has not ended yet";
    auto file = job_file(m_dir, job, JobFile::data);
    sink->consume(message(MessageKind::job_end, job, "b", k_t0 + 120 * k_second,
                          {cpu_block(50, 50, 0), memory_block(1e9, 1e9), io_block(1000, 2000), processes_block(5, 7)}),
                  at(120));
    EXPECT_EQ(sink->open_files(), 0u);
    EXPECT_EQ(sink->stats().summaries_written, 2u);

    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 150);
    EXPECT_DOUBLE_EQ(s->user_time_s, 130);
    EXPECT_DOUBLE_EQ(s->system_time_s, 20);
    EXPECT_DOUBLE_EQ(s->duration_s, 120);
    EXPECT_DOUBLE_EQ(s->cpus, 6);
    EXPECT_DOUBLE_EQ(s->cpu_efficiency, 150.0 / (120.0 * 6));
    EXPECT_DOUBLE_EQ(s->peak_memory_bytes, 3e9) << "host a has no peak: its max current counts";
    EXPECT_DOUBLE_EQ(s->read_bytes, 1100);
    EXPECT_DOUBLE_EQ(s->write_bytes, 2200);
    EXPECT_DOUBLE_EQ(s->read_chars, 15);
    EXPECT_DOUBLE_EQ(s->write_chars, 27);
    EXPECT_EQ(s->samples_received, 24u);
    EXPECT_EQ(s->samples_lost, 3u);
    EXPECT_EQ(s->hosts, 2u);
    EXPECT_EQ(s->ended_ns, k_t0 + 120 * k_second);

    Reader r(file);
    EXPECT_EQ(r.string("/hosts/a", "cpus"), "4");
    EXPECT_EQ(r.string("/hosts/b", "cpus"), "2");
    EXPECT_EQ(r.i64("/hosts/b", "samples_lost"), 3);
    EXPECT_EQ(r.time("/hosts/a/processes/segment_0").size(), 11u);
    EXPECT_EQ(r.time("/hosts/b/cgroup_io/segment_0").size(), 11u);
}

TEST_F(Hdf5SinkTest, unknown_cpus_gives_nan_efficiency)
{
    auto sink = make_sink(options(m_dir));
    sink->consume(message(MessageKind::sample, "j", "h", k_t0, {cpu_block(1, 1, 0)}), at(1));
    sink->consume(message(MessageKind::job_end, "j", "h", k_t0 + 10 * k_second, {cpu_block(5, 4, 1)}), at(2));
    auto s = collector::read_job_summary(job_file(m_dir, "j", JobFile::data));
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 5);
    EXPECT_DOUBLE_EQ(s->duration_s, 10);
    EXPECT_TRUE(std::isnan(s->cpus));
    EXPECT_TRUE(std::isnan(s->cpu_efficiency));
}

TEST_F(Hdf5SinkTest, changed_descriptors_start_a_new_segment)
{
    auto sink = make_sink(options(m_dir));
    const MetricDescriptor a{"a", "s", MetricKind::counter}, b{"b", "B", MetricKind::gauge},
        c{"c", "J", MetricKind::counter}, a_ms{"a", "ms", MetricKind::counter};
    int64_t t = k_t0;
    auto send = [&](std::vector<MetricDescriptor> m, std::vector<double> v) {
        t += k_second;
        sink->consume(message(MessageKind::sample, "seg", "h", t, {block("perfhw", std::move(m), std::move(v))}),
                      at(t));
    };
    for (int i = 0; i < 10; ++i)
        send({a, b}, {double(i), 100.0 + i});
    for (int i = 0; i < 5; ++i)
        send({a, b, c}, {double(i), 200.0 + i, 300.0 + i});
    for (int i = 0; i < 3; ++i)
        send({a, b}, {double(i), 400.0 + i});
    send({a_ms, b}, {1, 2});  // same names, another unit
    sink->close_all();

    Reader r(job_file(m_dir, "seg", JobFile::data));
    const std::string g = "/hosts/h/perfhw";
    EXPECT_EQ(r.i64(g, "segments"), 4);
    EXPECT_EQ(r.strings(g + "/segment_0", "names"), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(r.strings(g + "/segment_1", "names"), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(r.strings(g + "/segment_2", "names"), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(r.strings(g + "/segment_3", "units"), (std::vector<std::string>{"ms", "B"}));
    size_t cols = 0;
    auto v0 = r.values(g + "/segment_0", &cols);
    EXPECT_EQ(cols, 2u);
    ASSERT_EQ(v0.size(), 20u);
    EXPECT_EQ(v0[19], 109.0) << "old rows keep the old layout";
    auto v1 = r.values(g + "/segment_1", &cols);
    EXPECT_EQ(cols, 3u);
    ASSERT_EQ(v1.size(), 15u);
    EXPECT_EQ(v1[2], 300.0);
    EXPECT_EQ(r.time(g + "/segment_2").size(), 3u);
    EXPECT_EQ(r.i64(g + "/segment_1", "started_ns"), k_t0 + 11 * k_second);
}

TEST_F(Hdf5SinkTest, rows_wait_in_memory_until_batch_or_flush_interval)
{
    auto o = options(m_dir);
    o.batch_rows = 1000;
    o.flush_interval_s = 5;
    auto sink = make_sink(o);
    const int64_t start = 1000 * k_second;
    for (int i = 0; i < 10; ++i)
        sink->consume(message(MessageKind::sample, "j", "h", k_t0 + i, {cpu_block(i, i, 0), memory_block(i, i)}),
                      at(start + i));
    EXPECT_EQ(sink->stats().rows_written, 0u);
    sink->tick(start + 4 * k_second);
    EXPECT_EQ(sink->stats().rows_written, 0u);
    sink->tick(start + 6 * k_second);
    EXPECT_EQ(sink->stats().rows_written, 20u);
    EXPECT_EQ(sink->stats().write_batches, 2u);
    EXPECT_EQ(sink->stats().flushes, 1u);
    sink->tick(start + 12 * k_second);
    EXPECT_EQ(sink->stats().flushes, 1u) << "nothing new: no flush";
}

TEST_F(Hdf5SinkTest, idle_files_close_and_a_later_message_appends)
{
    auto o = options(m_dir);
    o.idle_close_s = 60;
    auto sink = make_sink(o);
    const int64_t start = 1000 * k_second;
    sink->consume(job_start("j", "h", k_t0, "2"), at(start));
    for (int i = 0; i < 5; ++i)
        sink->consume(message(MessageKind::sample, "j", "h", k_t0 + (i + 1) * k_second,
                              {cpu_block(10.0 * (i + 1), 0, 0), memory_block(1, 9e9)}),
                      at(start + i));
    sink->tick(start + 30 * k_second);
    EXPECT_EQ(sink->open_files(), 1u);
    sink->tick(start + 61 * k_second);
    EXPECT_EQ(sink->open_files(), 0u);
    EXPECT_EQ(sink->stats().files_closed, 1u);
    EXPECT_EQ(sink->stats().rows_written, 10u);

    // The job's state was forgotten; the reopen restores it from the file.
    const int64_t later = start + 100 * k_second;
    sink->consume(message(MessageKind::sample, "j", "h", k_t0 + 6 * k_second, {cpu_block(60, 0, 0)}), at(later));
    sink->consume(
        message(MessageKind::job_end, "j", "h", k_t0 + 8 * k_second, {cpu_block(k_nan, 0, 0), memory_block(1, 1)}),
        at(later + 1));
    EXPECT_EQ(sink->stats().files_opened, 2u);
    EXPECT_EQ(sink->open_files(), 0u);
    Reader r(job_file(m_dir, "j", JobFile::data));
    EXPECT_EQ(r.time("/hosts/h/cgroup_cpu/segment_0").size(), 7u);
    EXPECT_EQ(r.time("/hosts/h/cgroup_memory/segment_0").size(), 6u);
    EXPECT_FALSE(r.exists("/hosts/h/cgroup_cpu/segment_1"));
    EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 8);  // one message had no cgroup_cpu block
    r.close();
    auto s = collector::read_job_summary(job_file(m_dir, "j", JobFile::data));
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 60) << "last known usage; the final NaN is ignored";
    EXPECT_DOUBLE_EQ(s->peak_memory_bytes, 9e9) << "restored from the rows written before the close";
    EXPECT_DOUBLE_EQ(s->cpus, 2) << "restored from the host attribute";
    EXPECT_DOUBLE_EQ(s->duration_s, 8);
}

TEST_F(Hdf5SinkTest, read_job_summary_reports_missing_file_and_missing_summary)
{
    auto missing = collector::read_job_summary(m_dir / "nope.h5");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code(), Errc::not_found);

    auto sink = make_sink(options(m_dir));
    sink->consume(message(MessageKind::sample, "running", "h", k_t0, {cpu_block(1, 1, 0)}), at(1));
    sink->close_all();
    auto none = collector::read_job_summary(job_file(m_dir, "running", JobFile::data));
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().code(), Errc::not_found);
    EXPECT_NE(none.error().message().find("has not ended"), std::string::npos) << none.error().message();
}

}  // namespace

// After a collector restart the core knows no sender (Delivery::sender_new):
// the gap between the file's last stored seq and the next message is the
// loss, and what the file holds already is a duplicate.
TEST_F(Hdf5SinkTest, a_restarted_collector_counts_the_gap_from_the_file_and_drops_duplicates)
{
    const std::string job = "77";
    auto msg = [&](MessageKind kind, uint64_t seq) {
        Message m = kind == MessageKind::job_start
                        ? job_start(job, "h", k_t0, "1")
                        : message(kind, job, "h", k_t0 + static_cast<int64_t>(seq) * k_second,
                                  {cpu_block(static_cast<double>(seq), 0, 0)});
        m.seq = seq;
        return m;
    };
    {
        auto sink = make_sink(options(m_dir));
        sink->consume(msg(MessageKind::job_start, 1), at(1));
        for (uint64_t seq = 2; seq <= 10; ++seq)
            sink->consume(msg(MessageKind::sample, seq), at(static_cast<int64_t>(seq)));
        // 11, 12 and 13 then reached the collector but never its file (a
        // SIGKILL before the flush, Hdf5CrashTest): this run stops here.
        sink->close_all();
        Reader r(job_file(m_dir, job, JobFile::data));
        EXPECT_EQ(r.i64("/hosts/h", "last_seq"), 10);
    }
    auto sink = make_sink(options(m_dir));
    collector::Delivery first = at(100);
    first.sender_new = true;
    sink->consume(msg(MessageKind::sample, 9), first);  // stored before the restart
    sink->consume(msg(MessageKind::sample, 10), first);
    EXPECT_EQ(sink->stats().duplicates_dropped, 2u);
    sink->consume(msg(MessageKind::sample, 14), first);    // 11, 12, 13 never reached the file
    sink->consume(msg(MessageKind::sample, 14), at(101));  // a resend
    sink->consume(msg(MessageKind::job_end, 15), at(102));
    EXPECT_EQ(sink->stats().duplicates_dropped, 3u);
    Reader r(job_file(m_dir, job, JobFile::data));
    EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 12);  // seq 1-10, 14, 15
    EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 3);
    EXPECT_EQ(r.i64("/hosts/h", "last_seq"), 15);
    EXPECT_EQ(r.time("/hosts/h/cgroup_cpu/segment_0").size(), 11u);  // the job_start has no block
    EXPECT_EQ(r.i64("/summary", "samples_lost"), 3);
}

TEST_F(Hdf5SinkTest, a_sender_with_nothing_stored_counts_from_seq_0)
{
    const std::string job = "78";
    auto sink = make_sink(options(m_dir));
    Message m = job_start(job, "h", k_t0, "1");
    m.seq = 0;
    collector::Delivery first = at(1);
    first.sender_new = true;
    sink->consume(m, first);
    // A new sampler process on the host: its own numbering, from 0.
    Message again = message(MessageKind::sample, job, "h", k_t0 + k_second, {cpu_block(1, 0, 0)});
    again.sender = "h:999";
    again.seq = 0;
    sink->consume(again, first);
    // A host whose first 5 messages never reached the file (the collector
    // died before its first flush).
    Message late = message(MessageKind::sample, job, "h2", k_t0 + k_second, {cpu_block(1, 0, 0)});
    late.seq = 5;
    sink->consume(late, first);
    // The core saw this sender before (no sender_new): its gap is the core's.
    Message seen = message(MessageKind::sample, job, "h3", k_t0 + k_second, {cpu_block(1, 0, 0)});
    seen.seq = 7;
    sink->consume(seen, at(2, 1));
    EXPECT_EQ(sink->stats().duplicates_dropped, 0u);
    sink->close_all();
    Reader r(job_file(m_dir, job, JobFile::data));
    EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 0);
    EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 2);
    EXPECT_EQ(r.string("/hosts/h", "sender"), "h:999");
    EXPECT_EQ(r.i64("/hosts/h2", "samples_lost"), 5);
    EXPECT_EQ(r.i64("/hosts/h3", "samples_lost"), 1);
}

// A job whose job_end never came (the collector was down when it was sent)
// gets its summary after idle_close_s of silence, marked incomplete; the
// job_end, if it comes later, writes it again, complete.
TEST_F(Hdf5SinkTest, a_silent_job_without_job_end_gets_an_incomplete_summary)
{
    auto o = options(m_dir);
    o.idle_close_s = 60;
    auto sink = make_sink(o);
    const int64_t start = 1000 * k_second;
    for (const char *host : {"a", "b"}) {
        sink->consume(job_start("j", host, k_t0, "2"), at(start));
        sink->consume(message(MessageKind::sample, "j", host, k_t0 + k_second, {cpu_block(5, 0, 0)}), at(start + 1));
    }
    sink->consume(message(MessageKind::job_end, "j", "a", k_t0 + 2 * k_second, {cpu_block(6, 0, 0)}), at(start + 2));
    sink->tick(start + 30 * k_second);
    auto early = collector::read_job_summary(job_file(m_dir, "j", JobFile::data));
    ASSERT_TRUE(early.ok());
    EXPECT_EQ(early->hosts_without_job_end, 1u) << "written at a's job_end, b still running";
    sink->tick(start + 61 * k_second);
    EXPECT_EQ(sink->stats().summaries_incomplete, 1u);
    EXPECT_EQ(sink->open_files(), 0u);
    auto s = collector::read_job_summary(job_file(m_dir, "j", JobFile::data));
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->hosts_without_job_end, 1u);
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 11);
    sink->tick(start + 200 * k_second);
    EXPECT_EQ(sink->stats().summaries_incomplete, 1u) << "once per silence";

    sink->consume(message(MessageKind::job_end, "j", "b", k_t0 + 3 * k_second, {cpu_block(7, 0, 0)}),
                  at(start + 300 * k_second));
    auto done = collector::read_job_summary(job_file(m_dir, "j", JobFile::data));
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->hosts_without_job_end, 0u);
    EXPECT_DOUBLE_EQ(done->cpu_time_s, 13);
}
