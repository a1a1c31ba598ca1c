#include "collector/Collector.hpp"
#include "collector/SequenceTracker.hpp"
#include "common/clock.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

using namespace colmet;
using namespace colmet::collector;

namespace {

struct Recorded {
    wire::Message msg;
    Delivery delivery;
};

class RecordingSink : public Sink {
public:
    explicit RecordingSink(std::vector<Recorded> &out) : m_out(out) {}
    void consume(const wire::Message &msg, const Delivery &d) noexcept override { m_out.push_back({msg, d}); }
    void tick(int64_t) noexcept override { ++ticks; }
    void flush_all(int64_t) noexcept override { ++flushes; }
    void close_all() noexcept override { closed = true; }
    int ticks = 0;
    int flushes = 0;
    bool closed = false;

private:
    std::vector<Recorded> &m_out;
};

std::string encoded(uint64_t seq, uint64_t dropped = 0, const std::string &sender = "s1",
                    wire::MessageKind kind = wire::MessageKind::sample, const std::string &job = "1")
{
    wire::Message m;
    m.kind = kind;
    m.host = "h";
    m.job_id = job;
    m.sender = sender;
    m.seq = seq;
    m.dropped = dropped;
    m.time_ns = realtime_ns();  // the admission checks refuse times far from the collector's clock
    std::string bytes;
    EXPECT_TRUE(wire::encode(m, bytes));
    return bytes;
}

}  // namespace

TEST(SequenceTracker, counts_gaps_per_sender)
{
    SequenceTracker t;
    EXPECT_EQ(t.observe("a", 10, 0), 0u);  // first message heard: nothing known lost
    EXPECT_EQ(t.observe("a", 11, 1), 0u);
    EXPECT_EQ(t.observe("a", 15, 2), 3u);
    EXPECT_EQ(t.observe("b", 0, 3), 0u);
    EXPECT_EQ(t.observe("a", 12, 4), 0u);  // late or duplicate: no loss, no rewind
    EXPECT_EQ(t.observe("a", 16, 5), 0u);
}

TEST(SequenceTracker, forgets_the_oldest_sender_when_full)
{
    SequenceTracker t(2);
    t.observe("a", 1, 1);
    t.observe("b", 1, 2);
    t.observe("c", 1, 3);
    EXPECT_EQ(t.size(), 2u);
    EXPECT_EQ(t.observe("a", 5, 4), 0u);  // "a" was forgotten: treated as new
}

TEST(Collector, flush_all_reaches_every_sink)
{
    std::vector<Recorded> a, b;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<RecordingSink>(a));
    sinks.push_back(std::make_unique<RecordingSink>(b));
    auto *first = static_cast<RecordingSink *>(sinks[0].get());
    auto *second = static_cast<RecordingSink *>(sinks[1].get());
    Collector c(std::move(sinks));
    c.flush_all(1);
    EXPECT_EQ(first->flushes, 1);
    EXPECT_EQ(second->flushes, 1);
    EXPECT_FALSE(first->closed);
}

TEST(Collector, valid_messages_reach_every_sink_with_loss_counted)
{
    std::vector<Recorded> a, b;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<RecordingSink>(a));
    sinks.push_back(std::make_unique<RecordingSink>(b));
    Collector c(std::move(sinks));
    for (auto seq : {0, 1, 4}) {
        auto bytes = encoded(static_cast<uint64_t>(seq), seq == 4 ? 2 : 0);
        c.handle_frame(bytes.data(), bytes.size(), false, 1);
    }
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(a[2].delivery.lost, 2u + 2u);  // gap of 2, plus 2 the sender dropped
    EXPECT_EQ(c.stats().lost, 4u);
    EXPECT_EQ(c.stats().accepted, 3u);
}

TEST(Collector, bad_frames_are_counted_by_reason_and_never_reach_sinks)
{
    std::vector<Recorded> a;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<RecordingSink>(a));
    Collector c(std::move(sinks));
    std::string garbage = "\xc1\xc1\xc1";
    c.handle_frame(garbage.data(), garbage.size(), false, 1);
    std::string huge(wire::k_max_message_bytes + 10, '\0');
    c.handle_frame(huge.data(), huge.size(), false, 1);
    auto good = encoded(0);
    // A three-frame message: rejected once, all its frames dropped, even a valid one.
    c.handle_frame(good.data(), good.size(), true, 1);
    c.handle_frame(good.data(), good.size(), true, 1);
    c.handle_frame(good.data(), good.size(), false, 1);
    // Then a valid single frame goes through.
    c.handle_frame(good.data(), good.size(), false, 1);
    EXPECT_EQ(a.size(), 1u);
    const auto &s = c.stats();
    EXPECT_EQ(s.received, 6u);
    EXPECT_EQ(s.invalid, 1u);
    EXPECT_EQ(s.oversized, 1u);
    EXPECT_EQ(s.multipart, 1u);
    EXPECT_EQ(s.rejected, 3u);
    EXPECT_EQ(s.accepted, 1u);
    EXPECT_NE(s.to_string().find("rejected 3"), std::string::npos);
}

TEST(Collector, refused_messages_are_counted_by_reason_and_never_reach_sinks)
{
    std::vector<Recorded> a;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<RecordingSink>(a));
    Collector c(std::move(sinks));
    auto send = [&](const std::string &bytes) { c.handle_frame(bytes.data(), bytes.size(), false, 1); };
    send(encoded(0, 0, "s1", wire::MessageKind::job_start));
    send(encoded(3, 0, "s1", wire::MessageKind::job_start));  // a second job_start (a resend would have seq 0)
    send(encoded(5'000'000));                                 // a seq no sampler reaches
    wire::Message old;
    old.host = "h";
    old.job_id = "1";
    old.sender = "s2";
    old.time_ns = 5;  // 1970
    std::string bytes;
    ASSERT_TRUE(wire::encode(old, bytes));
    send(bytes);
    send(encoded(1));
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[1].delivery.lost, 0u);  // the refused seq was never tracked
    const auto &s = c.stats();
    EXPECT_EQ(s.received, 5u);
    EXPECT_EQ(s.accepted, 2u);
    EXPECT_EQ(s.rejected, 3u);
    EXPECT_EQ(s.refused_job_restart, 1u);
    EXPECT_EQ(s.refused_sequence, 1u);
    EXPECT_EQ(s.refused_clock, 1u);
    EXPECT_NE(s.to_string().find("refused 3 [clock 1, sequence 1, job_start 1]"), std::string::npos) << s.to_string();
}

TEST(Collector, takes_its_admission_limits)
{
    std::vector<Recorded> a;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<RecordingSink>(a));
    Collector c(std::move(sinks), {.max_jobs_per_host = 1});
    auto first = encoded(0, 0, "s1", wire::MessageKind::job_start, "1");
    auto second = encoded(0, 0, "s2", wire::MessageKind::job_start, "2");
    c.handle_frame(first.data(), first.size(), false, 1);
    c.handle_frame(second.data(), second.size(), false, 1);
    EXPECT_EQ(a.size(), 1u);
    EXPECT_EQ(c.stats().refused_jobs_per_host, 1u);
    EXPECT_NE(c.stats().to_string().find("refused 1 [jobs_per_host 1]"), std::string::npos) << c.stats().to_string();
}

TEST(Collector, tick_and_close_reach_sinks)
{
    std::vector<Recorded> a;
    auto sink = std::make_unique<RecordingSink>(a);
    auto *raw = sink.get();
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::move(sink));
    Collector c(std::move(sinks));
    c.tick(1);
    c.close_all();
    EXPECT_EQ(raw->ticks, 1);
    EXPECT_TRUE(raw->closed);
}

#include "collector/sinks/stdout/StdoutSink.hpp"

#include <cstdio>

TEST(StdoutSink, prints_one_readable_block_per_message)
{
    std::FILE *out = std::tmpfile();
    ASSERT_NE(out, nullptr);
    StdoutSink sink(out);
    wire::Message m;
    m.kind = wire::MessageKind::job_start;
    m.host = "n1";
    m.job_id = "42";
    m.sender = "s";
    m.seq = 3;
    m.time_ns = 1'764'676'800'250'000'000;  // 2025-12-02T12:00:00.250Z
    m.meta = {{"user", "alice"}};
    wire::BackendBlock b;
    b.name = "cgroup_memory";
    b.metrics = {{"current", "B", wire::MetricKind::gauge}, {"peak", "B", wire::MetricKind::gauge}};
    b.values = {1048576, std::numeric_limits<double>::quiet_NaN()};
    b.status = "memory.peak: not provided by this kernel";
    m.backends = {b};
    sink.consume(m, Delivery{2, 0});
    sink.close_all();
    std::rewind(out);
    std::string text;
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, out))
        text.append(buf, n);
    std::fclose(out);
    EXPECT_EQ(text, "2025-12-02T12:00:00.250Z job=42 host=n1 job_start seq=3 lost=2\n"
                    "  meta user = alice\n"
                    "  cgroup_memory: memory.peak: not provided by this kernel\n"
                    "  cgroup_memory.current = 1048576 B (gauge)\n"
                    "  cgroup_memory.peak = - B (gauge)\n");
}

namespace {

std::string acked(uint64_t seq, uint64_t base = 0, const std::string &sender = "s1")
{
    wire::Message m;
    m.version = wire::k_acked_protocol_version;
    m.ack = 1;
    m.base = base;
    m.host = "h";
    m.job_id = "1";
    m.sender = sender;
    m.seq = seq;
    m.time_ns = realtime_ns();
    std::string bytes;
    EXPECT_TRUE(wire::encode(m, bytes));
    return bytes;
}

class AcknowledgingSink : public RecordingSink {
public:
    using RecordingSink::RecordingSink;
    bool acknowledges() const override { return true; }
    void take_acks(std::vector<wire::Ack> &out) override { out.push_back({"from-sink", 99}); }
};

}  // namespace

// An acknowledged sender's gaps are not losses (it resends them), a resend
// is flagged, and without a sink that stores durably the core acknowledges
// the highest seq it received of each sender.
TEST(Collector, acknowledged_senders_resend_instead_of_losing)
{
    std::vector<Recorded> a;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<RecordingSink>(a));
    Collector c(std::move(sinks));
    auto send = [&](const std::string &bytes) { c.handle_frame(bytes.data(), bytes.size(), false, 1); };
    send(acked(0));
    send(acked(3));  // 1 and 2 will come again
    send(acked(1));  // the resend
    send(acked(0, 0, "s2"));
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[1].delivery.lost, 0u);
    EXPECT_FALSE(a[1].delivery.resent);
    EXPECT_TRUE(a[2].delivery.resent);
    EXPECT_EQ(c.stats().lost, 0u);
    std::vector<wire::Ack> acks;
    c.take_acks(acks);
    std::sort(acks.begin(), acks.end(), [](const auto &x, const auto &y) { return x.sender < y.sender; });
    ASSERT_EQ(acks.size(), 2u);
    EXPECT_EQ(acks[0].sender, "s1");
    EXPECT_EQ(acks[0].seq, 3u);
    EXPECT_EQ(acks[1].sender, "s2");
    EXPECT_EQ(acks[1].seq, 0u);
    acks.clear();
    c.take_acks(acks);
    EXPECT_TRUE(acks.empty());
    // A version-1 sender is never acknowledged, and its gap is a loss.
    send(encoded(0, 0, "v1"));
    send(encoded(2, 0, "v1"));
    c.take_acks(acks);
    EXPECT_TRUE(acks.empty());
    EXPECT_EQ(c.stats().lost, 1u);

    // A sink that stores durably answers instead of the core.
    std::vector<Recorded> b;
    std::vector<std::unique_ptr<Sink>> durable;
    durable.push_back(std::make_unique<AcknowledgingSink>(b));
    Collector d(std::move(durable));
    d.handle_frame(acked(0).data(), acked(0).size(), false, 1);
    d.take_acks(acks);
    ASSERT_EQ(acks.size(), 1u);
    EXPECT_EQ(acks[0].sender, "from-sink");
}

namespace {

// A sink that queues (as the time-series sink does): it drops what it is
// told to, at a tick or at its close, and acknowledges when no sink records
// its losses.
class QueueingSink : public Sink {
public:
    void consume(const wire::Message &, const Delivery &) noexcept override {}
    void tick(int64_t) noexcept override { move(); }
    void flush_all(int64_t) noexcept override {}
    void close_all() noexcept override
    {
        drop_next = {"j", "h", 2};
        move();
        closed_at = ++*clock;
    }
    bool acknowledges() const override { return !recorder; }
    void set_loss_recorder(bool present) override { recorder = present; }
    void take_losses(std::vector<SinkLoss> &out) override
    {
        out.insert(out.end(), pending.begin(), pending.end());
        pending.clear();
    }
    void move()
    {
        if (drop_next.points > 0)
            pending.push_back(std::exchange(drop_next, {}));
    }
    bool recorder = false;
    SinkLoss drop_next;
    std::vector<SinkLoss> pending;
    int *clock = nullptr;
    int closed_at = 0;
};

class RecordingLossSink : public Sink {
public:
    void consume(const wire::Message &, const Delivery &) noexcept override {}
    void tick(int64_t) noexcept override {}
    void flush_all(int64_t) noexcept override {}
    void close_all() noexcept override { closed_at = ++*clock; }
    bool acknowledges() const override { return true; }
    bool records_losses() const override { return true; }
    void record_losses(const std::vector<SinkLoss> &losses, int64_t) noexcept override
    {
        for (const auto &l : losses)
            recorded.push_back({l, ++*clock});
    }
    std::vector<std::pair<SinkLoss, int>> recorded;
    int *clock = nullptr;
    int closed_at = 0;
};

}  // namespace

TEST(Collector, a_queueing_sinks_losses_reach_the_recording_sink_before_it_closes)
{
    int clock = 0;
    auto queue = std::make_unique<QueueingSink>();
    auto record = std::make_unique<RecordingLossSink>();
    queue->clock = record->clock = &clock;
    QueueingSink *q = queue.get();
    RecordingLossSink *r = record.get();
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::move(record));  // the recorder first: closing must still take the queue first
    sinks.push_back(std::move(queue));
    Collector c(std::move(sinks));
    EXPECT_TRUE(q->recorder) << "told that a sink records its losses";
    EXPECT_FALSE(q->acknowledges());
    q->drop_next = {"j", "h", 5};
    c.tick(1);
    ASSERT_EQ(r->recorded.size(), 1u);
    EXPECT_EQ(r->recorded[0].first.points, 5u);
    c.close_all();
    ASSERT_EQ(r->recorded.size(), 2u) << "what the queue dropped at its close";
    EXPECT_EQ(r->recorded[1].first.points, 2u);
    EXPECT_LT(q->closed_at, r->recorded[1].second);
    EXPECT_LT(r->recorded[1].second, r->closed_at);
}

TEST(Collector, alone_a_queueing_sink_acknowledges_and_two_acknowledging_sinks_are_refused)
{
    std::vector<std::unique_ptr<Sink>> alone;
    alone.push_back(std::make_unique<QueueingSink>());
    auto *q = static_cast<QueueingSink *>(alone.back().get());
    Collector c(std::move(alone));
    EXPECT_FALSE(q->recorder);
    EXPECT_TRUE(q->acknowledges());

    std::vector<std::unique_ptr<Sink>> two;
    two.push_back(std::make_unique<QueueingSink>());
    two.push_back(std::make_unique<QueueingSink>());
    EXPECT_THROW(Collector(std::move(two)), std::logic_error);
}
