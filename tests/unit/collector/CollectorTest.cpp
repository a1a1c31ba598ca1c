#include "collector/Collector.hpp"
#include "collector/SequenceTracker.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

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
    void close_all() noexcept override { closed = true; }
    int ticks = 0;
    bool closed = false;

private:
    std::vector<Recorded> &m_out;
};

std::string encoded(uint64_t seq, uint64_t dropped = 0, const std::string &sender = "s1")
{
    wire::Message m;
    m.host = "h";
    m.job_id = "1";
    m.sender = sender;
    m.seq = seq;
    m.dropped = dropped;
    m.time_ns = 5;
    std::string bytes;
    EXPECT_TRUE(wire::encode(m, bytes));
    return bytes;
}

} // namespace

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
