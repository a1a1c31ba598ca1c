// Sampler with acknowledged delivery, through a scripted transport: messages
// wait in the outbox while no collector is connected and go out in order
// when one is; acknowledgements empty the outbox; no acknowledgement within
// the timeout sends everything again from the oldest, with a doubling
// timeout; a full outbox gives up the oldest and says so in `base`; the job
// end waits for the last acknowledgements only while the collector may
// answer.
#include "node/Sampler.hpp"

#include "ScriptedTransport.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>

using namespace colmet;
using namespace colmet::node;
using namespace colmet::node::testing;

namespace {

class OneMetric : public MetricBackend {
public:
    explicit OneMetric(size_t status_bytes = 0) : m_text(status_bytes, 'x') {}
    std::string_view name() const override { return "fake"; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override { values[0] = 1; }
    std::string_view status() const override { return m_text; }

private:
    std::vector<wire::MetricDescriptor> m_metrics{{"one", "1", wire::MetricKind::gauge}};
    std::string m_text;
};

std::unique_ptr<Sampler> make_sampler(Script &script, double ack_timeout_s = 30, size_t outbox_bytes = 1 << 20,
                                      size_t status_bytes = 0, const std::string &spool_dir = {})
{
    SamplerConfig c;
    c.job_id = "7";
    c.host = "h";
    c.period_s = 1;
    c.ack_timeout_s = ack_timeout_s;
    c.ack_wait_s = 0.5;
    c.outbox_bytes = outbox_bytes;
    c.spool_dir = spool_dir;
    c.spool_target.uri = "tcp://127.0.0.1:1";
    c.spool_target.ack_uri = "tcp://127.0.0.1:2";
    std::vector<std::unique_ptr<MetricBackend>> backends;
    backends.push_back(std::make_unique<OneMetric>(status_bytes));
    return std::make_unique<Sampler>(c, std::move(backends), std::make_unique<ScriptedTransport>(script));
}

std::vector<uint64_t> seqs(const std::vector<Sent> &sent)
{
    std::vector<uint64_t> out;
    out.reserve(sent.size());
    for (const auto &s : sent)
        out.push_back(s.seq);
    return out;
}

using Seqs = std::vector<uint64_t>;

TEST(SamplerDeliveryTest, messages_wait_for_a_collector_and_leave_in_order)
{
    Script script;
    auto sampler = make_sampler(script);
    sampler->step(wire::MessageKind::job_start);
    sampler->step(wire::MessageKind::sample);
    sampler->step(wire::MessageKind::sample);
    EXPECT_TRUE(script.sent.empty());
    EXPECT_EQ(sampler->outbox()->size(), 3u);
    script.connected = true;
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{0, 1, 2, 3}));
    EXPECT_EQ(script.sent.front().kind, wire::MessageKind::job_start);
    script.next.acked = 2;
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(sampler->outbox()->size(), 2u);  // 3 and 4
    // A reconnection: 3 and 4 may have died with the old connection.
    script.next.reconnected = true;
    script.sent.clear();
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{5, 3, 4, 5}));
    for (const auto &s : script.sent)
        EXPECT_EQ(s.base, 3u) << "what the sampler still holds";
    EXPECT_EQ(sampler->outbox()->stats().resent, 3u);
}

TEST(SamplerDeliveryTest, no_acknowledgement_within_the_timeout_sends_everything_again)
{
    Script script;
    script.connected = true;
    auto sampler = make_sampler(script, 0.2);
    sampler->step(wire::MessageKind::job_start);
    sampler->step(wire::MessageKind::sample);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    script.sent.clear();
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{2, 0, 1, 2}));
    // The next resend waits twice as long.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    script.sent.clear();
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{3})) << "0.4 s not over yet";
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    script.sent.clear();
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{4, 0, 1, 2, 3, 4}));
    // Progress brings the timeout back to its start.
    script.next.acked = 4;
    script.sent.clear();
    sampler->step(wire::MessageKind::sample);
    EXPECT_TRUE(sampler->outbox()->size() == 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    script.sent.clear();
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{6, 5, 6}));
}

TEST(SamplerDeliveryTest, a_full_outbox_gives_up_the_oldest_and_the_collector_is_told)
{
    Script script;
    // Messages of about 1.1 KiB (a long status), an outbox of 3 of them.
    auto sampler = make_sampler(script, 30, 4000, 1000);
    for (int i = 0; i < 6; ++i)
        sampler->step(i == 0 ? wire::MessageKind::job_start : wire::MessageKind::sample);
    EXPECT_EQ(sampler->outbox()->size(), 3u);
    script.connected = true;
    sampler->step(wire::MessageKind::sample);
    EXPECT_EQ(seqs(script.sent), (Seqs{4, 5, 6}));
    for (const auto &s : script.sent)
        EXPECT_EQ(s.base, 4u) << "0 to 3 were given up";
    script.may_answer = false;
    sampler->finish();
    EXPECT_EQ(sampler->stats().dropped, 4u);
    EXPECT_EQ(sampler->stats().unacknowledged, 3u);
}

TEST(SamplerDeliveryTest, the_job_end_waits_for_acknowledgements_only_while_they_may_come)
{
    Script script;
    script.connected = true;
    auto sampler = make_sampler(script);
    sampler->step(wire::MessageKind::job_start);
    sampler->step(wire::MessageKind::job_end);
    // The collector answers: no waiting beyond that.
    script.next.acked = 1;
    auto t0 = std::chrono::steady_clock::now();
    sampler->finish();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
    EXPECT_EQ(sampler->stats().unacknowledged, 0u);

    // A collector that is connected but silent: the whole ack-wait (0.5 s).
    Script silent;
    silent.connected = true;
    auto waiting = make_sampler(silent);
    waiting->step(wire::MessageKind::job_end);
    t0 = std::chrono::steady_clock::now();
    waiting->finish();
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(450));
    EXPECT_EQ(waiting->stats().unacknowledged, 1u);

    // A collector known to be away: no wait at all.
    Script away;
    away.may_answer = false;
    auto quick = make_sampler(away);
    quick->step(wire::MessageKind::job_end);
    t0 = std::chrono::steady_clock::now();
    quick->finish();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
    EXPECT_EQ(quick->stats().unacknowledged, 1u);
}

TEST(SamplerDeliveryTest, the_job_end_with_the_collector_away_spools_everything_unacknowledged_at_once)
{
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("colmet-sampler-spool-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    Script away;
    away.may_answer = false;
    // A small outbox: most of the job is spooled while it runs already.
    auto sampler = make_sampler(away, 30, 600, 100, dir.string());
    for (int i = 0; i < 10; ++i)
        sampler->step(i == 0 ? wire::MessageKind::job_start : wire::MessageKind::sample);
    sampler->step(wire::MessageKind::job_end);
    EXPECT_GT(sampler->outbox()->spooled(), 0u);
    const auto t0 = std::chrono::steady_clock::now();
    sampler->finish();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
    EXPECT_EQ(sampler->stats().spooled, 11u);
    EXPECT_EQ(sampler->stats().unacknowledged, 0u);
    EXPECT_EQ(sampler->stats().dropped, 0u);
    const auto file = sampler->outbox()->spool()->path();
    sampler.reset();  // the sampler exits: its lock goes
    SpoolContents contents;
    auto spool = Spool::open_existing(file, contents);
    ASSERT_TRUE(spool) << spool.error().message();
    ASSERT_EQ(contents.records.size(), 11u);
    EXPECT_EQ(contents.records.front().seq, 0u);
    EXPECT_EQ(contents.records.back().seq, 10u);
    EXPECT_EQ(contents.header->job_id, "7");
    EXPECT_EQ(contents.header->uri, "tcp://127.0.0.1:1");
    std::filesystem::remove_all(dir);
}

}  // namespace
