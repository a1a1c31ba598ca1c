// The sampler's outbox (acknowledged delivery): sending in order, resending
// from the oldest unacknowledged message, acknowledgements, the byte bound
// and what `base` says to the collector.
#include "node/delivery/Outbox.hpp"
#include "OutboxEntries.hpp"

#include "wire/codec.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::node;
using namespace colmet::node::testing;

namespace {

TEST(OutboxTest, sends_in_order_and_again_from_the_oldest_unacknowledged)
{
    Outbox box(1 << 20);
    EXPECT_EQ(box.base(), 0u);
    for (uint64_t seq = 0; seq < 3; ++seq)
        box.push(make_entry(seq));
    EXPECT_EQ(send_all(box), (SeqBase{{0, 0}, {1, 0}, {2, 0}}));
    EXPECT_TRUE(box.all_sent());
    EXPECT_TRUE(box.acknowledge(1));
    EXPECT_FALSE(box.acknowledge(1)) << "nothing new";
    EXPECT_FALSE(box.acknowledge(0)) << "stale";
    EXPECT_EQ(box.base(), 2u);
    box.push(make_entry(3));
    EXPECT_EQ(send_all(box), (SeqBase{{3, 2}}));
    ASSERT_TRUE(box.rewind());  // a reconnection: what was in flight may be lost
    // Resent bytes carry the base of now, not of when they were made.
    EXPECT_EQ(send_all(box), (SeqBase{{2, 2}, {3, 2}}));
    EXPECT_EQ(box.stats().resent, 2u);
    EXPECT_EQ(box.stats().sent, 6u);
    EXPECT_EQ(box.stats().rewinds, 1u);
    EXPECT_TRUE(box.acknowledge(3));
    EXPECT_TRUE(box.empty());
    EXPECT_EQ(box.base(), 4u) << "the next seq when nothing is held";
    EXPECT_EQ(box.bytes(), 0u);
    EXPECT_FALSE(box.rewind());
    EXPECT_EQ(box.stats().acknowledged, 4u);
}

TEST(OutboxTest, an_acknowledgement_during_sending_keeps_the_cursor_on_the_next_unsent)
{
    Outbox box(1 << 20);
    for (uint64_t seq = 0; seq < 5; ++seq)
        box.push(make_entry(seq));
    ASSERT_NE(box.next(), nullptr);
    box.sent();
    box.next();
    box.sent();  // 0 and 1 sent
    EXPECT_TRUE(box.acknowledge(0));
    EXPECT_EQ(send_all(box), (SeqBase{{2, 1}, {3, 1}, {4, 1}}));
}

TEST(OutboxTest, the_bound_pushes_the_oldest_out_and_moves_base_past_them)
{
    const size_t one = make_entry(0, 1000).bytes.size();
    Outbox box(3 * one + one / 2);  // no spool
    for (uint64_t seq = 0; seq < 6; ++seq)
        box.push(make_entry(seq, 1000));
    EXPECT_EQ(box.size(), 3u);
    EXPECT_EQ(box.stats().overflowed, 3u);
    EXPECT_LE(box.bytes(), 3 * one + one / 2);
    EXPECT_EQ(box.base(), 3u);
    EXPECT_EQ(send_all(box), (SeqBase{{3, 3}, {4, 3}, {5, 3}}));
    // A message larger than the bound still goes (alone).
    Outbox tiny(10);
    tiny.push(make_entry(0, 100));
    tiny.push(make_entry(1, 100));
    EXPECT_EQ(tiny.size(), 1u);
    EXPECT_EQ(tiny.base(), 1u);
}

TEST(OutboxTest, without_a_spool_the_job_end_keeps_nothing)
{
    Outbox box(1 << 20);
    for (uint64_t seq = 0; seq < 4; ++seq)
        box.push(make_entry(seq));
    box.acknowledge(1);
    EXPECT_EQ(box.spool_all(), 0u);
    EXPECT_EQ(box.size(), 2u) << "still held, unacknowledged";
    EXPECT_EQ(box.spool(), nullptr);
}

}  // namespace
