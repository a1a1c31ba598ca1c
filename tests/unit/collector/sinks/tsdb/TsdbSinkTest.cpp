// TsdbSink: what becomes a point, with which labels, and when a batch goes.
// Batches are captured (with_submit) in line protocol, which reads as text.
#include "collector/sinks/tsdb/TsdbSink.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <sstream>

namespace colmet::collector::tsdb {
namespace {

using wire::MessageKind;
using wire::MetricKind;

constexpr int64_t k_s = 1'000'000'000;

wire::BackendBlock block(std::string name, wire::Scope scope, std::vector<wire::MetricDescriptor> metrics,
                         std::vector<double> values)
{
    wire::BackendBlock b;
    b.name = std::move(name);
    b.scope = scope;
    b.metrics = std::move(metrics);
    b.values = std::move(values);
    return b;
}

wire::Message message(MessageKind kind, std::string job, std::string host, int64_t t, std::vector<wire::BackendBlock> b)
{
    wire::Message m;
    m.kind = kind;
    m.job_id = std::move(job);
    m.host = std::move(host);
    m.sender = m.host + ":1";
    m.time_ns = t;
    m.backends = std::move(b);
    return m;
}

wire::BackendBlock cpu(double usage, double user)
{
    return block("cgroup_cpu", wire::Scope::job,
                 {{"usage", "s", MetricKind::counter}, {"user", "s", MetricKind::counter}}, {usage, user});
}

wire::BackendBlock rapl(double joules)
{
    return block("rapl", wire::Scope::node, {{"package_0", "J", MetricKind::counter}}, {joules});
}

struct Captured {
    std::vector<std::string> bodies;
    std::vector<uint64_t> points;
    std::vector<uint64_t> batches;
    std::optional<BatchFate> fate = BatchFate::stored;  // nullopt: the test settles
    std::string all() const
    {
        std::string s;
        for (const auto &b : bodies)
            s += b;
        return s;
    }
};

std::unique_ptr<TsdbSink> sink(Captured &c, TsdbOptions o = {})
{
    o.protocol = Protocol::influx;
    return TsdbSink::with_submit(o, [&c](std::string body, uint64_t points, uint64_t batch) {
        c.bodies.push_back(std::move(body));
        c.points.push_back(points);
        c.batches.push_back(batch);
        return c.fate;
    });
}

TEST(TsdbSinkTest, values_become_points_with_the_jobs_labels_and_nan_is_no_point)
{
    Captured c;
    TsdbOptions o;
    o.cluster = "ci";
    auto s = sink(c, o);
    auto start = message(MessageKind::job_start, "7", "n1", 10 * k_s, {cpu(0.5, 0.25)});
    start.meta = {{"user", "alice"}, {"cpus", "2"}};
    s->consume(start, {0, 1});
    s->consume(message(MessageKind::sample, "7", "n1", 11 * k_s, {cpu(NAN, 1.5)}), {0, 2});
    s->close_all();
    EXPECT_EQ(c.all(), "colmet_job,cluster=ci,host=n1,job_id=7,user=alice host_cpus=2 10000000000\n"
                       "colmet_cgroup_cpu,cluster=ci,host=n1,job_id=7,user=alice usage_seconds_total=0.5 10000000000\n"
                       "colmet_cgroup_cpu,cluster=ci,host=n1,job_id=7,user=alice user_seconds_total=0.25 10000000000\n"
                       "colmet_job,cluster=ci,host=n1,job_id=7,user=alice host_cpus=2 11000000000\n"
                       "colmet_cgroup_cpu,cluster=ci,host=n1,job_id=7,user=alice user_seconds_total=1.5 11000000000\n");
    EXPECT_EQ(c.points, std::vector<uint64_t>{5});
}

TEST(TsdbSinkTest, the_jobs_context_labels_its_points_and_summary_and_other_keys_do_not)
{
    Captured c;
    auto s = sink(c);
    auto start = message(MessageKind::job_start, "8", "n1", 10 * k_s, {cpu(0.5, 0.25)});
    start.meta = {{"user", "alice"}, {"partition", "gpu"}, {"job_name", "run 1"}, {"time_limit_s", "600"}};
    s->consume(start, {0, 1});
    // A key that comes later (a step's colmet-ctl --context) labels what follows.
    auto later = message(MessageKind::sample, "8", "n1", 11 * k_s, {cpu(1, 0.5)});
    later.meta = {{"account", "physics"}};
    s->consume(later, {0, 2});
    s->consume(message(MessageKind::job_end, "8", "n1", 12 * k_s, {cpu(1.5, 1)}), {0, 3});
    s->close_all();
    const std::string all = c.all();
    for (const char *line :
         {"colmet_cgroup_cpu,host=n1,job_id=8,partition=gpu,user=alice usage_seconds_total=0.5 10000000000\n",
          "colmet_cgroup_cpu,account=physics,host=n1,job_id=8,partition=gpu,user=alice usage_seconds_total=1 "
          "11000000000\n",
          "colmet_job,account=physics,job_id=8,partition=gpu,user=alice duration_seconds=2 12000000000\n"})
        EXPECT_NE(all.find(line), std::string::npos) << line << "in\n" << all;
    EXPECT_EQ(all.find("job_name"), std::string::npos);  // not a label: high cardinality
    EXPECT_EQ(all.find("time_limit"), std::string::npos);
}

TEST(TsdbSinkTest, a_raised_flag_is_one_point_with_the_jobs_labels)
{
    Captured c;
    TsdbOptions o;
    o.flag_rules.window_s = 10;
    auto s = sink(c, o);
    auto start = message(MessageKind::job_start, "6", "n1", 10 * k_s, {cpu(0, 0)});
    start.meta = {{"user", "ann"}, {"cpus", "4"}, {"partition", "p"}};
    s->consume(start, {0, 1});
    for (int t = 11; t <= 25; ++t)  // 0.1 CPU-s a second on 4 CPUs: 2.5 %
        s->consume(message(MessageKind::sample, "6", "n1", t * k_s, {cpu(0.1 * (t - 10), 0)}), {0, int64_t{t} - 9});
    s->consume(message(MessageKind::job_end, "6", "n1", 26 * k_s, {cpu(1.6, 0)}), {0, 17});
    s->close_all();
    const std::string all = c.all();
    const std::string line = "colmet_job,flag=low_cpu_efficiency,job_id=6,partition=p,user=ann flag=1 20000000000\n";
    EXPECT_NE(all.find(line), std::string::npos) << all;
    EXPECT_EQ(all.find("flag=low_cpu_efficiency", all.find(line) + line.size()), std::string::npos) << "raised once";
}

TEST(TsdbSinkTest, node_values_are_written_once_per_host_and_time_without_job_labels)
{
    Captured c;
    auto s = sink(c);
    // Two jobs on n1 (period 2 s) send the node's RAPL reading at nearly the
    // same times; a third job on n2.
    auto at = [](std::string job, std::string host, int64_t t, double j) {
        auto m = message(MessageKind::sample, std::move(job), std::move(host), t, {rapl(j)});
        m.period_s = 2;
        return m;
    };
    s->consume(at("1", "n1", 10 * k_s, 100), {0, 1});
    s->consume(at("2", "n1", 10 * k_s + 3'000'000, 100), {0, 2});  // 3 ms later: the same reading
    s->consume(at("3", "n2", 10 * k_s, 50), {0, 3});
    s->consume(at("2", "n1", 12 * k_s, 130), {0, 4});
    s->consume(at("1", "n1", 11 * k_s, 120), {0, 5});  // older than written
    s->consume(at("1", "n1", 12 * k_s + 1'000'000, 130), {0, 6});
    s->close_all();
    EXPECT_EQ(c.all(), "colmet_rapl,host=n1 package_0_joules_total=100 10000000000\n"
                       "colmet_rapl,host=n2 package_0_joules_total=50 10000000000\n"
                       "colmet_rapl,host=n1 package_0_joules_total=130 12000000000\n");
}

TEST(TsdbSinkTest, a_batch_goes_when_full_or_old_enough)
{
    Captured c;
    TsdbOptions o;
    o.batch_points = 4;
    o.batch_interval_s = 1;
    auto s = sink(c, o);
    s->consume(message(MessageKind::sample, "7", "n1", 1 * k_s, {cpu(1, 1)}), {0, 100 * k_s});
    EXPECT_TRUE(c.bodies.empty());
    s->consume(message(MessageKind::sample, "7", "n1", 2 * k_s, {cpu(2, 2)}), {0, 100 * k_s});
    ASSERT_EQ(c.points, std::vector<uint64_t>{4}) << "full at 4 points";
    s->consume(message(MessageKind::sample, "7", "n1", 3 * k_s, {cpu(3, 3)}), {0, 101 * k_s});
    s->tick(101 * k_s + k_s / 2);
    EXPECT_EQ(c.points.size(), 1u) << "half a second old";
    s->tick(102 * k_s);
    EXPECT_EQ(c.points, (std::vector<uint64_t>{4, 2})) << "a second old";
    s->tick(110 * k_s);
    s->flush_all(110 * k_s);
    s->close_all();
    EXPECT_EQ(c.points.size(), 2u) << "nothing more to send";
}

TEST(TsdbSinkTest, the_descriptor_cache_follows_changed_descriptors)
{
    Captured c;
    auto s = sink(c);
    auto m = message(MessageKind::sample, "7", "n1", 1 * k_s, {cpu(1, 2)});
    auto wire_bytes = std::make_shared<const std::string>("descriptors v1");
    m.backends[0].metrics_wire = wire_bytes;
    s->consume(m, {0, 1});
    auto changed = message(MessageKind::sample, "7", "n1", 2 * k_s,
                           {block("cgroup_cpu", wire::Scope::job, {{"system", "s", MetricKind::counter}}, {3})});
    changed.backends[0].metrics_wire = std::make_shared<const std::string>("descriptors v2");
    s->consume(changed, {0, 2});
    s->close_all();
    EXPECT_NE(c.all().find("system_seconds_total=3 2000000000"), std::string::npos) << c.all();
}

}  // namespace
}  // namespace colmet::collector::tsdb

namespace colmet::collector::tsdb {
namespace {

TEST(TsdbSinkTest, the_summary_follows_the_last_hosts_job_end)
{
    Captured c;
    auto s = sink(c);
    for (std::string host : {"n1", "n2"}) {
        auto start = message(MessageKind::job_start, "9", host, 10 * k_s, {cpu(0, 0)});
        start.meta = {{"user", "bob"}, {"cpus", "4"}};
        s->consume(start, {0, 1});
    }
    s->consume(message(MessageKind::job_end, "9", "n1", 20 * k_s, {cpu(8, 6)}), {0, 2});
    s->flush_all(0);
    EXPECT_EQ(c.all().find("colmet_job,job_id"), std::string::npos) << "n2 still runs";
    s->consume(message(MessageKind::job_end, "9", "n2", 30 * k_s, {cpu(12, 10)}), {0, 3});
    s->close_all();
    const std::string all = c.all();
    for (const char *line : {"colmet_job,job_id=9,user=bob duration_seconds=20 30000000000\n",
                             "colmet_job,job_id=9,user=bob cpu_time_seconds=20 30000000000\n",
                             "colmet_job,job_id=9,user=bob user_time_seconds=16 30000000000\n",
                             "colmet_job,job_id=9,user=bob cpus=8 30000000000\n",
                             "colmet_job,job_id=9,user=bob cpu_efficiency_ratio=0.125 30000000000\n",
                             "colmet_job,job_id=9,user=bob samples_received=4 30000000000\n",
                             "colmet_job,job_id=9,user=bob samples_lost=0 30000000000\n",
                             "colmet_job,job_id=9,user=bob hosts=2 30000000000\n"})
        EXPECT_NE(all.find(line), std::string::npos) << line << "in\n" << all;
    EXPECT_EQ(all.find("peak_memory_bytes"), std::string::npos) << "no memory data: no point";
}

}  // namespace
}  // namespace colmet::collector::tsdb

// What the sink answers for (BatchLedger.hpp): alone, a sender is
// acknowledged only for what the store holds; beside a sink that records
// losses, what it queued counts and a dropped batch becomes losses.
namespace colmet::collector::tsdb {
namespace {

// Message `seq` of the acknowledged sender "n1:1" of job 5 (usage = seq).
wire::Message acked(uint64_t seq, uint64_t base = 0, MessageKind kind = MessageKind::sample)
{
    auto m = message(kind, "5", "n1", (100 + static_cast<int64_t>(seq)) * k_s, {cpu(static_cast<double>(seq), 0.5)});
    m.version = wire::k_acked_protocol_version;
    m.ack = 1;
    m.seq = seq;
    m.base = base;
    return m;
}

Delivery fresh(int64_t t) { return {0, t, false, false}; }
Delivery resend(int64_t t) { return {0, t, false, true}; }

std::vector<uint64_t> acks(TsdbSink &s)
{
    std::vector<wire::Ack> out;
    s.take_acks(out);
    std::vector<uint64_t> seqs;
    for (const auto &a : out) {
        EXPECT_EQ(a.sender, "n1:1");
        seqs.push_back(a.seq);
    }
    return seqs;
}

size_t count(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

using Seqs = std::vector<uint64_t>;

TEST(TsdbSinkAckTest, alone_it_acknowledges_only_what_the_store_holds)
{
    Captured c;
    c.fate = std::nullopt;  // the test says what became of each batch
    TsdbOptions o;
    o.batch_points = 2;  // one message a batch (host_cpus is unknown: usage and user)
    auto s = sink(c, o);
    s->set_loss_recorder(false);
    EXPECT_TRUE(s->acknowledges());
    for (uint64_t seq = 1; seq <= 4; ++seq)
        s->consume(acked(seq), fresh(static_cast<int64_t>(seq)));
    s->flush_all(5);
    ASSERT_EQ(c.batches.size(), 4u);
    EXPECT_EQ(acks(*s), Seqs{}) << "queued is not stored";

    s->settle(c.batches[0], BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{1});
    s->settle(c.batches[1], BatchFate::dropped);  // seq 2 lost on the way
    s->settle(c.batches[2], BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{}) << "seq 2 is missing: nothing past 1";

    // The sender resends from its oldest unacknowledged message: only seq 2
    // is written again; 4 is still on its way.
    const std::string before = c.all();
    for (uint64_t seq = 2; seq <= 4; ++seq)
        s->consume(acked(seq), resend(10));
    s->flush_all(11);
    ASSERT_EQ(c.batches.size(), 5u);
    EXPECT_EQ(c.all().substr(before.size()),
              "colmet_cgroup_cpu,host=n1,job_id=5 usage_seconds_total=2 102000000000\n"
              "colmet_cgroup_cpu,host=n1,job_id=5 user_seconds_total=0.5 102000000000\n");
    s->settle(c.batches[4], BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{3});
    s->settle(c.batches[3], BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{4});

    // A resend of what is stored is acknowledged again, and not written.
    s->consume(acked(4), resend(12));
    s->flush_all(13);
    EXPECT_EQ(c.batches.size(), 5u);
    EXPECT_EQ(acks(*s), Seqs{4});
    s->close_all();
}

TEST(TsdbSinkAckTest, alone_a_refused_batch_is_acknowledged_and_a_given_up_one_is_passed)
{
    Captured c;
    c.fate = std::nullopt;
    TsdbOptions o;
    o.batch_points = 1;
    auto s = sink(c, o);
    s->set_loss_recorder(false);
    s->consume(acked(1), fresh(1));
    s->consume(acked(2), fresh(2));
    s->settle(c.batches[0], BatchFate::rejected);  // a 4xx: sending again would not help
    s->settle(c.batches[1], BatchFate::dropped);
    EXPECT_EQ(acks(*s), Seqs{1});
    // The sender gave seq 2 up (its base is 3): nothing waits for it, and
    // 3 is on its way.
    s->consume(acked(3, 3), fresh(3));
    EXPECT_EQ(acks(*s), Seqs{2});
    s->settle(c.batches.back(), BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{3});
    // Messages with nothing to write are acknowledged as they come.
    auto empty = acked(4);
    empty.backends.clear();
    s->consume(empty, fresh(4));
    EXPECT_EQ(acks(*s), Seqs{4});
    // A message that does not ask is never acknowledged.
    auto plain = message(MessageKind::sample, "5", "n1", 200 * k_s, {cpu(9, 9)});
    s->consume(plain, fresh(5));
    s->flush_all(6);
    s->settle(c.batches.back(), BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{});
    s->close_all();
}

TEST(TsdbSinkAckTest, alone_the_summary_of_a_dropped_batch_is_sent_again_once)
{
    Captured c;
    c.fate = std::nullopt;
    auto s = sink(c);
    s->set_loss_recorder(false);
    auto start = acked(0, 0, MessageKind::job_start);
    start.meta = {{"user", "eve"}, {"cpus", "1"}};
    s->consume(start, fresh(1));
    s->consume(acked(1, 0, MessageKind::job_end), fresh(2));
    s->flush_all(3);
    ASSERT_EQ(c.batches.size(), 1u);
    EXPECT_EQ(count(c.all(), "duration_seconds=1 "), 1u) << c.all();
    s->settle(c.batches[0], BatchFate::dropped);
    // The resent messages are written again; the summary goes once more
    // (from the settle), not again from the resent job_end.
    s->consume(start, resend(4));
    s->consume(acked(1, 0, MessageKind::job_end), resend(5));
    s->flush_all(6);
    ASSERT_EQ(c.batches.size(), 2u);
    EXPECT_EQ(count(c.all(), "duration_seconds=1 "), 2u) << c.all();
    EXPECT_EQ(count(c.all(), "samples_received=2 "), 2u) << "the resend counts once in the summary";
    s->settle(c.batches[1], BatchFate::stored);
    EXPECT_EQ(acks(*s), Seqs{1});
    s->close_all();
}

TEST(TsdbSinkAckTest, beside_a_loss_recorder_queued_counts_and_a_dropped_batch_becomes_losses)
{
    Captured c;
    c.fate = std::nullopt;
    TsdbOptions o;
    o.batch_points = 1000;
    auto s = sink(c, o);
    s->set_loss_recorder(true);
    EXPECT_FALSE(s->acknowledges());
    s->consume(acked(1), fresh(1));
    auto other = message(MessageKind::sample, "6", "n2", 100 * k_s, {cpu(1, 1), rapl(10)});
    s->consume(other, fresh(2));
    s->flush_all(3);
    s->consume(acked(2), fresh(4));
    s->flush_all(5);
    ASSERT_EQ(c.batches.size(), 2u);
    EXPECT_EQ(acks(*s), Seqs{}) << "the recording sink acknowledges";
    // A resend is never written again: the first writing counted.
    s->consume(acked(1), resend(6));
    s->flush_all(7);
    EXPECT_EQ(c.batches.size(), 2u);

    std::vector<SinkLoss> losses;
    s->settle(c.batches[1], BatchFate::stored);
    s->take_losses(losses);
    EXPECT_TRUE(losses.empty());
    s->settle(c.batches[0], BatchFate::dropped);
    s->take_losses(losses);
    std::sort(losses.begin(), losses.end(), [](const auto &a, const auto &b) { return a.job_id < b.job_id; });
    ASSERT_EQ(losses.size(), 2u);
    EXPECT_EQ(losses[0].job_id, "5");
    EXPECT_EQ(losses[0].host, "n1");
    EXPECT_EQ(losses[0].points, 2u);
    EXPECT_EQ(losses[1].job_id, "6");
    EXPECT_EQ(losses[1].host, "n2");
    EXPECT_EQ(losses[1].points, 3u) << "node values count for the job whose message carried them";
    EXPECT_EQ(losses[0].points + losses[1].points, c.points[0]);
    s->close_all();
}

}  // namespace
}  // namespace colmet::collector::tsdb

namespace colmet::collector::tsdb {
namespace {

// A small model of the sender's queue (bounded, oldest dropped first) in
// front of a store that is away, then back; the node resends everything
// unacknowledged, in order, now and then. In the end every message is
// acknowledged and each is in the store exactly once.
TEST(TsdbSinkAckTest, drops_and_resends_in_any_order_end_with_every_message_stored_once)
{
    for (unsigned seed = 1; seed <= 50; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 random(seed);
        Captured c;
        c.fate = std::nullopt;
        TsdbOptions o;
        o.batch_points = 2 + random() % 6;
        o.protocol = Protocol::influx;
        std::deque<std::pair<uint64_t, std::string>> queue;  // the sender's queue
        const size_t capacity = 1 + random() % 4;
        auto s = TsdbSink::with_submit(o, [&](std::string body, uint64_t, uint64_t batch) -> std::optional<BatchFate> {
            queue.emplace_back(batch, std::move(body));
            return std::nullopt;
        });
        s->set_loss_recorder(false);
        std::map<std::string, int> stored;  // line -> times stored
        std::vector<uint64_t> to_drop;
        auto make_room = [&] {
            while (queue.size() > capacity) {
                s->settle(queue.front().first, BatchFate::dropped);
                queue.pop_front();
            }
        };
        auto deliver = [&] {
            while (!queue.empty()) {
                auto [id, body] = queue.front();
                queue.pop_front();
                std::istringstream lines(body);
                for (std::string line; std::getline(lines, line);)
                    ++stored[line];
                s->settle(id, BatchFate::stored);
            }
        };
        const uint64_t n = 20 + random() % 30;
        uint64_t last_ack = 0;
        bool any_ack = false;
        auto take = [&] {
            for (uint64_t a : acks(*s)) {
                EXPECT_TRUE(!any_ack || a >= last_ack);
                last_ack = a;
                any_ack = true;
            }
        };
        int64_t t = 1;
        for (uint64_t seq = 0; seq < n; ++seq) {
            s->consume(acked(seq), fresh(++t));
            make_room();
            take();
        }
        s->flush_all(++t);
        make_room();
        take();
        // Resend rounds; the store comes back after a few.
        const int down_rounds = 1 + static_cast<int>(random() % 4);
        for (int round = 0; round < 20 && !(any_ack && last_ack == n - 1); ++round) {
            for (uint64_t seq = any_ack ? last_ack + 1 : 0; seq < n; ++seq) {
                s->consume(acked(seq), resend(++t));
                make_room();
            }
            s->flush_all(++t);
            make_room();
            if (round >= down_rounds)
                deliver();
            take();
        }
        ASSERT_TRUE(any_ack);
        EXPECT_EQ(last_ack, n - 1);
        for (uint64_t seq = 0; seq < n; ++seq) {
            const std::string line = "colmet_cgroup_cpu,host=n1,job_id=5 usage_seconds_total=" + std::to_string(seq) +
                                     " " + std::to_string((100 + seq) * 1'000'000'000ULL);
            EXPECT_EQ(stored[line], 1) << line;
        }
        s->close_all();
    }
}

}  // namespace
}  // namespace colmet::collector::tsdb
