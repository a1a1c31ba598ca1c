// Hdf5Sink with acknowledged delivery (docs/protocol.md): a sender that asks
// for acknowledgements gets them only for what its job's file holds after a
// flush; its messages are stored in seq order and once each, a resend fills
// what a crash or a full disk lost, and only what the sender gave up (its
// `base`) counts as lost.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class Hdf5AckTest : public ::testing::Test {
protected:
    // Message `seq` of the acknowledged sender "h/1/1" of job 90: a job_start
    // at 0, samples after (cgroup_cpu usage = seq), base as given.
    static Message acked(uint64_t seq, uint64_t base = 0, MessageKind kind = MessageKind::sample)
    {
        Message m = seq == 0 ? job_start("90", "h", k_t0, "1")
                             : message(kind, "90", "h", k_t0 + static_cast<int64_t>(seq) * k_second,
                                       {cpu_block(static_cast<double>(seq), 0, 0)});
        m.sender = "h/1/1";
        m.version = wire::k_acked_protocol_version;
        m.ack = 1;
        m.seq = seq;
        m.base = base;
        return m;
    }

    static std::vector<uint64_t> acks_of(collector::Hdf5Sink &sink)
    {
        std::vector<wire::Ack> acks;
        sink.take_acks(acks);
        std::vector<uint64_t> seqs;
        for (const auto &a : acks) {
            EXPECT_EQ(a.sender, "h/1/1");
            seqs.push_back(a.seq);
        }
        return seqs;
    }

    // The cgroup_cpu usage column of the job's file: one value per stored sample.
    std::vector<double> usage() const
    {
        Reader r(job_file(m_dir, "90", JobFile::data));
        size_t cols = 0;
        auto v = r.values("/hosts/h/cgroup_cpu/segment_0", &cols);
        std::vector<double> out;
        for (size_t i = 0; cols > 0 && i < v.size(); i += cols)
            out.push_back(v[i]);
        return out;
    }

    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("out");
};

using Seqs = std::vector<uint64_t>;

TEST_F(Hdf5AckTest, acknowledges_only_what_a_flush_wrote)
{
    for (bool fsync : {false, true}) {
        SCOPED_TRACE(fsync ? "fsync" : "no fsync");
        std::filesystem::remove_all(m_dir);
        auto o = options(m_dir);
        o.fsync = fsync;
        auto sink = make_sink(o);
        EXPECT_TRUE(sink->acknowledges());
        for (uint64_t seq = 0; seq <= 4; ++seq)
            sink->consume(acked(seq), at(static_cast<int64_t>(seq) + 1));
        sink->tick(10);
        EXPECT_EQ(acks_of(*sink), Seqs{}) << "nothing is in the file yet";
        sink->flush_all(11);
        EXPECT_EQ(acks_of(*sink), Seqs{4});
        EXPECT_EQ(acks_of(*sink), Seqs{}) << "an acknowledgement is handed out once";
        // A resend of what the file holds (the acknowledgement was lost on
        // the way): dropped, and acknowledged again.
        sink->consume(acked(2), at(12));
        EXPECT_EQ(sink->stats().duplicates_dropped, 1u);
        sink->tick(13);
        EXPECT_EQ(acks_of(*sink), Seqs{4});
        sink->consume(acked(5, 0, MessageKind::job_end), at(14));  // the job end writes at once
        EXPECT_EQ(acks_of(*sink), Seqs{5});
        sink->close_all();
        EXPECT_EQ(usage(), (std::vector<double>{1, 2, 3, 4, 5}));
        Reader r(job_file(m_dir, "90", JobFile::data));
        EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 0);
        EXPECT_EQ(r.i64("/hosts/h", "last_seq"), 5);
    }
}

TEST_F(Hdf5AckTest, stores_in_order_and_counts_only_what_the_sender_gave_up)
{
    auto sink = make_sink(options(m_dir));
    for (uint64_t seq = 0; seq <= 3; ++seq)
        sink->consume(acked(seq), at(1));
    // 4 was lost on the way: 5 and 6 wait for its resend, not stored.
    sink->consume(acked(5), at(2));
    sink->consume(acked(6), at(3));
    EXPECT_EQ(sink->stats().messages_deferred, 2u);
    sink->flush_all(4);
    EXPECT_EQ(acks_of(*sink), Seqs{3});
    for (uint64_t seq = 4; seq <= 6; ++seq)  // the resend, from the oldest unacknowledged
        sink->consume(acked(seq), at(5));
    // The sender's outbox overflowed: 7 and 8 are gone for good (base 9).
    sink->consume(acked(10, 9), at(6));  // waits for 9, but 7 and 8 are counted now
    sink->consume(acked(9, 9), at(7));
    sink->consume(acked(10, 9), at(8));
    sink->consume(acked(11, 9, MessageKind::job_end), at(9));
    EXPECT_EQ(acks_of(*sink), Seqs{11});
    EXPECT_EQ(sink->stats().messages_deferred, 3u);
    EXPECT_EQ(sink->stats().duplicates_dropped, 0u);
    sink->close_all();
    EXPECT_EQ(usage(), (std::vector<double>{1, 2, 3, 4, 5, 6, 9, 10, 11}));
    Reader r(job_file(m_dir, "90", JobFile::data));
    EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 2);
    EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 10);
    EXPECT_EQ(r.i64("/summary", "samples_lost"), 2);
}

// A collector killed before its flush lost rows it had received; they were
// never acknowledged, so the sampler resends everything from its oldest
// unacknowledged message: the restarted collector stores the missing ones
// once, in order, and nothing is lost.
TEST_F(Hdf5AckTest, a_resend_after_a_restart_fills_the_file_without_duplicates)
{
    {
        auto sink = make_sink(options(m_dir));
        for (uint64_t seq = 0; seq <= 5; ++seq)
            sink->consume(acked(seq), at(1));
        sink->close_all();  // 0..5 in the file; 6..8 then died with the collector
    }
    auto sink = make_sink(options(m_dir));
    collector::Delivery first = at(10);
    first.sender_new = true;
    sink->consume(acked(9), first);  // the live message that came first
    EXPECT_EQ(sink->stats().messages_deferred, 1u);
    for (uint64_t seq = 3; seq <= 9; ++seq)  // the resend: 3..5 were acknowledged late
        sink->consume(acked(seq), at(11));
    sink->consume(acked(10, 6, MessageKind::job_end), at(12));
    EXPECT_EQ(sink->stats().duplicates_dropped, 3u);
    sink->close_all();
    EXPECT_EQ(usage(), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    Reader r(job_file(m_dir, "90", JobFile::data));
    EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 0);
    EXPECT_EQ(r.i64("/hosts/h", "last_seq"), 10);
}

// While writing is paused for want of space nothing is acknowledged, and
// what does not fit the memory budget is not dropped but left to the
// sender; once space returns the file is complete.
TEST_F(Hdf5AckTest, a_full_disk_acknowledges_nothing_and_loses_nothing)
{
    auto o = options(m_dir);
    auto free_bytes = std::make_shared<std::atomic<uint64_t>>(uint64_t{1} << 40);
    o.free_bytes_probe = [free_bytes](const std::filesystem::path &) -> std::optional<uint64_t> {
        return free_bytes->load();
    };
    o.memory_budget_bytes = 8ULL << 20;
    auto sink = make_sink(o);
    sink->consume(acked(0), at(1));
    sink->flush_all(2);
    EXPECT_EQ(acks_of(*sink), Seqs{0});
    free_bytes->store(0);
    // Large messages: the budget holds only some of them.
    auto big = [](uint64_t seq) {
        Message m = acked(seq);
        std::vector<wire::MetricDescriptor> d;
        std::vector<double> v;
        for (int i = 0; i < 1000; ++i) {
            d.push_back({"m" + std::to_string(i), "1", wire::MetricKind::gauge});
            v.push_back(static_cast<double>(seq));
        }
        m.backends.push_back(block("wide", d, v));
        return m;
    };
    uint64_t seq = 1;
    for (; seq <= 2000 && sink->stats().messages_deferred == 0; ++seq)
        sink->consume(big(seq), at(static_cast<int64_t>(seq) + 2));
    const uint64_t first_deferred = seq - 1;
    ASSERT_GT(sink->stats().messages_deferred, 0u) << "the budget never filled";
    sink->tick(5000);
    EXPECT_EQ(acks_of(*sink), Seqs{});
    EXPECT_EQ(sink->stats().rows_dropped, 0u);
    // Space returns; the sampler's timeout resends from the oldest
    // unacknowledged message.
    free_bytes->store(uint64_t{1} << 40);
    sink->flush_all(6000);
    EXPECT_EQ(acks_of(*sink), Seqs{first_deferred - 1});
    for (uint64_t s = 1; s < seq; ++s)
        sink->consume(big(s), at(7000));
    sink->consume(acked(seq, 0, MessageKind::job_end), at(7001));
    const Seqs acks = acks_of(*sink);
    ASSERT_FALSE(acks.empty());
    EXPECT_EQ(acks.back(), seq);
    EXPECT_TRUE(std::is_sorted(acks.begin(), acks.end()));
    EXPECT_EQ(sink->stats().rows_dropped, 0u);
    sink->close_all();
    const auto stored = usage();
    ASSERT_EQ(stored.size(), seq);
    for (uint64_t s = 1; s <= seq; ++s)
        EXPECT_EQ(stored[s - 1], static_cast<double>(s));
    Reader r(job_file(m_dir, "90", JobFile::data));
    EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 0);
}

// The time-series sink's undelivered points (Sink::record_losses) land in
// the host's tsdb_points_dropped and the summary: while the job is open, once
// it ended and its file was closed, and from a sink that forgot the job; a
// job without a file gets none and the points count as unrecorded.
TEST_F(Hdf5AckTest, another_sinks_losses_are_recorded_in_the_file_and_its_summary)
{
    const auto path = job_file(m_dir, "90", JobFile::data);
    {
        auto sink = make_sink(options(m_dir));
        EXPECT_TRUE(sink->records_losses());
        for (uint64_t seq = 0; seq <= 2; ++seq)
            sink->consume(acked(seq), at(static_cast<int64_t>(seq) + 1));
        sink->record_losses({{"90", "h", 7}}, 10);  // while the job runs
        sink->consume(acked(3, 0, MessageKind::job_end), at(12));
        EXPECT_EQ(sink->open_jobs(), 0u) << "ended: its file is closed";
        EXPECT_EQ(Reader(path).i64("/hosts/h", "tsdb_points_dropped"), 7);
        EXPECT_EQ(Reader(path).i64("/summary", "tsdb_points_dropped"), 7);
        sink->record_losses({{"90", "h", 5}}, 13);
        EXPECT_EQ(Reader(path).i64("/summary", "tsdb_points_dropped"), 12) << "the summary is written again";
        sink->record_losses({{"91", "h", 3}}, 14);
        EXPECT_FALSE(std::filesystem::exists(job_file(m_dir, "91", JobFile::data))) << "no file made for a loss";
        EXPECT_EQ(sink->stats().tsdb_points_recorded, 12u);
        EXPECT_EQ(sink->stats().tsdb_points_unrecorded, 3u);
        sink->close_all();
    }
    auto later = make_sink(options(m_dir));  // knows nothing of job 90
    later->record_losses({{"90", "h", 1}}, 1);
    later->close_all();
    Reader r(path);
    EXPECT_EQ(r.i64("/hosts/h", "tsdb_points_dropped"), 13);
    EXPECT_EQ(r.i64("/summary", "tsdb_points_dropped"), 13);
    EXPECT_EQ(r.i64("/summary", "samples_received"), 4) << "nothing else changed";
}

}  // namespace
