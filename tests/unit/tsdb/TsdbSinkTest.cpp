// TsdbSink: what becomes a point, with which labels, and when a batch goes.
// Batches are captured (with_submit) in line protocol, which reads as text.
#include "collector/sinks/tsdb/TsdbSink.hpp"

#include <gtest/gtest.h>

#include <cmath>
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
    return TsdbSink::with_submit(o, [&c](std::string body, uint64_t points) {
        c.bodies.push_back(std::move(body));
        c.points.push_back(points);
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
