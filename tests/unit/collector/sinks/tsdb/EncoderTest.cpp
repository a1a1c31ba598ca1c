// The request bodies of the two protocols, read back: remote write through
// snappy and protobuf, line protocol as text.
#include "collector/sinks/tsdb/Encoder.hpp"

#include "remote.pb.h"
#include "scheduler/JobContext.hpp"

#include <gtest/gtest.h>
#include <snappy.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

namespace colmet::collector::tsdb {
namespace {

constexpr int64_t k_t = 1'700'000'000'123'456'789;

prompb::WriteRequest decode(const std::string &body)
{
    std::string raw;
    EXPECT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
    prompb::WriteRequest req;
    EXPECT_TRUE(req.ParseFromString(raw));
    return req;
}

TEST(EncoderTest, remote_write_sends_sorted_labels_exact_values_and_milliseconds)
{
    auto e = make_encoder(Protocol::remote_write);
    const SeriesName usage = series_name("cgroup_cpu", {"usage", "s", wire::MetricKind::counter});
    const SeriesName task = series_name("perfhw", {"task_clock", "s", wire::MetricKind::counter});
    const double exact = 0.1 + 0.2;  // not representable in 12 digits
    e->labels({"ci", "node1", "42", "alice"});
    e->add(usage, exact, k_t);
    e->labels({"", "node1", "42", ""});
    e->add(task, 1e300, k_t + 1'000'000);
    EXPECT_EQ(e->points(), 2u);
    const auto req = decode(e->take());
    EXPECT_EQ(e->points(), 0u);
    ASSERT_EQ(req.timeseries_size(), 2);
    const auto &a = req.timeseries(0);
    std::vector<std::pair<std::string, std::string>> labels;
    for (const auto &l : a.labels())
        labels.emplace_back(l.name(), l.value());
    EXPECT_EQ(labels,
              (std::vector<std::pair<std::string, std::string>>{{"__name__", "colmet_cgroup_cpu_usage_seconds_total"},
                                                                {"cluster", "ci"},
                                                                {"host", "node1"},
                                                                {"job_id", "42"},
                                                                {"user", "alice"}}));
    ASSERT_EQ(a.samples_size(), 1);
    EXPECT_EQ(a.samples(0).value(), exact);
    EXPECT_EQ(a.samples(0).timestamp(), 1'700'000'000'123);
    const auto &b = req.timeseries(1);
    ASSERT_EQ(b.labels_size(), 4);  // empty labels left out; event between cluster and host
    EXPECT_EQ(b.labels(1).name(), "event");
    EXPECT_EQ(b.labels(1).value(), "task_clock");
    EXPECT_EQ(b.samples(0).value(), 1e300);
    EXPECT_EQ(b.samples(0).timestamp(), 1'700'000'000'124);
    // The next batch starts empty.
    e->labels({"", "h", "1", ""});
    e->add(usage, 1, k_t);
    EXPECT_EQ(decode(e->take()).timeseries_size(), 1);
    // A GPU's index is its label "gpu", where "event" goes (both sort there).
    auto gpu = e->prepare(series_name("gpu", {"gpu1_power", "W", wire::MetricKind::gauge}));
    e->labels({"ci", "h", "1", ""});
    e->add(gpu, 250, k_t);
    const auto g = decode(e->take()).timeseries(0);
    ASSERT_EQ(g.labels_size(), 5);
    EXPECT_EQ(g.labels(0).value(), "colmet_gpu_power_watts");
    EXPECT_EQ(g.labels(1).name(), "cluster");
    EXPECT_EQ(g.labels(2).name(), "gpu");
    EXPECT_EQ(g.labels(2).value(), "1");
    EXPECT_EQ(g.labels(3).name(), "host");
}

TEST(EncoderTest, remote_write_labels_are_copied_when_given)
{
    // The decoder reuses a message's strings: same address, other content.
    // The points keep the labels as they were when given.
    auto e = make_encoder(Protocol::remote_write);
    const SeriesName usage = series_name("cgroup_cpu", {"usage", "s", wire::MetricKind::counter});
    std::string host = "node1", job = "7";
    e->labels({"", host, job, ""});
    e->add(usage, 1, k_t);
    host[4] = '2';  // the strings change under the encoder
    job = "8";
    e->add(usage, 2, k_t);  // still the labels given
    e->labels({"", host, job, "bob"});
    e->add(usage, 3, k_t);
    const auto req = decode(e->take());
    ASSERT_EQ(req.timeseries_size(), 3);
    const auto label = [&](int series, const std::string &name) {
        for (const auto &l : req.timeseries(series).labels())
            if (l.name() == name)
                return l.value();
        return std::string("<none>");
    };
    EXPECT_EQ(label(1, "host"), "node1");
    EXPECT_EQ(label(1, "job_id"), "7");
    EXPECT_EQ(label(2, "host"), "node2");
    EXPECT_EQ(label(2, "job_id"), "8");
    EXPECT_EQ(label(2, "user"), "bob");
    EXPECT_EQ(label(1, "user"), "<none>");
}

// The labels of a series as (name, value) pairs.
std::vector<std::pair<std::string, std::string>> labels_of(const prompb::TimeSeries &series)
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &l : series.labels())
        out.emplace_back(l.name(), l.value());
    return out;
}

TEST(EncoderTest, remote_write_batches_of_prepared_series_refer_back_and_read_back_whole)
{
    // As TsdbSink writes them: prepared series kept across messages and
    // batches, labels changing per message, job and node scopes, events
    // between plain names. The body refers back to earlier bytes of the
    // batch; every point must read back exactly, and a batch must never
    // refer into the one before.
    auto e = make_encoder(Protocol::remote_write);
    std::vector<PreparedSeries> names;
    std::vector<SeriesName> plain;
    for (const auto &[backend, metric] : std::vector<std::pair<std::string, wire::MetricDescriptor>>{
             {"cgroup_cpu", {"usage", "s", wire::MetricKind::counter}},
             {"perfhw", {"instructions", "1", wire::MetricKind::counter}},
             {"perfhw", {"cycles", "1", wire::MetricKind::counter}},
             {"cgroup_memory", {"current", "B", wire::MetricKind::gauge}},
             {"cgroup_memory",
              {"a_metric_name_long_enough_for_two_references_of_sixty_four", "B", wire::MetricKind::gauge}}}) {
        plain.push_back(series_name(backend, metric));
        names.push_back(e->prepare(plain.back()));
    }
    constexpr int k_messages = 3000;  // about 15,000 points, 2 MB of protobuf: offsets past 64 KiB too
    for (int batch = 0; batch < 3; ++batch) {
        std::vector<std::tuple<std::string, std::string, std::string, double, int64_t>>
            expected;  // name, event, host, value, ms
        for (int m = 0; m < k_messages; ++m) {
            const std::string host = "node" + std::to_string((m * 7) % 101) + ".example.org";
            const std::string job = std::to_string(m / 3);
            const bool node = m % 5 == 0;
            e->labels({m % 11 == 0 ? "" : "ci", host, node ? "" : job, node ? "" : "alice"});
            for (size_t i = 0; i < names.size(); ++i) {
                if ((m + static_cast<int>(i)) % 4 == 0)
                    continue;  // not every series in every message
                const double value = m * 10.0 + static_cast<double>(i) + batch * 0.25;
                const int64_t ms = 1'700'000'000'123 + m / 2;  // two messages at a time, or one
                e->add(names[i], value, ms * 1'000'000 + 999'999);
                expected.emplace_back(plain[i].full(), plain[i].event, host, value, ms);
            }
        }
        const std::string body = e->take();
        std::string raw;
        ASSERT_TRUE(snappy::IsValidCompressedBuffer(body.data(), body.size()));
        ASSERT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
        EXPECT_LT(body.size() * 3, raw.size()) << "the repeats should be references";
        prompb::WriteRequest req;
        ASSERT_TRUE(req.ParseFromString(raw));
        ASSERT_EQ(req.timeseries_size(), static_cast<int>(expected.size()));
        for (int i = 0; i < req.timeseries_size(); ++i) {
            const auto &[name, event, host, value, ms] = expected[static_cast<size_t>(i)];
            const auto labels = labels_of(req.timeseries(i));
            ASSERT_GE(labels.size(), 2u);
            EXPECT_EQ(labels[0], std::make_pair(std::string("__name__"), name)) << i;
            EXPECT_EQ(std::find(labels.begin(), labels.end(), std::make_pair(std::string("host"), host)) !=
                          labels.end(),
                      true)
                << i;
            EXPECT_EQ(std::find(labels.begin(), labels.end(), std::make_pair(std::string("event"), event)) !=
                          labels.end(),
                      !event.empty())
                << i;
            EXPECT_TRUE(std::is_sorted(labels.begin(), labels.end())) << i;
            ASSERT_EQ(req.timeseries(i).samples_size(), 1);
            EXPECT_EQ(req.timeseries(i).samples(0).value(), value);
            EXPECT_EQ(req.timeseries(i).samples(0).timestamp(), ms);
        }
    }
}

TEST(EncoderTest, remote_write_prepared_series_are_safe_with_another_encoder)
{
    // A series last written by one encoder is written whole by another:
    // its offsets belong to the first one's batch.
    auto a = make_encoder(Protocol::remote_write);
    auto b = make_encoder(Protocol::remote_write);
    PreparedSeries usage = a->prepare(series_name("cgroup_cpu", {"usage", "s", wire::MetricKind::counter}));
    a->labels({"", "node1", "7", ""});
    for (int i = 0; i < 3; ++i)
        a->add(usage, i, k_t);
    b->labels({"x", "node2", "8", ""});
    b->add(usage, 9, k_t);
    const auto req = decode(b->take());
    ASSERT_EQ(req.timeseries_size(), 1);
    EXPECT_EQ(labels_of(req.timeseries(0)),
              (std::vector<std::pair<std::string, std::string>>{{"__name__", "colmet_cgroup_cpu_usage_seconds_total"},
                                                                {"cluster", "x"},
                                                                {"host", "node2"},
                                                                {"job_id", "8"}}));
    EXPECT_EQ(decode(a->take()).timeseries_size(), 3);
}

TEST(EncoderTest, remote_write_headers)
{
    const auto h = make_encoder(Protocol::remote_write)->headers();
    EXPECT_NE(std::find(h.begin(), h.end(), "Content-Encoding: snappy"), h.end());
    EXPECT_NE(std::find(h.begin(), h.end(), "Content-Type: application/x-protobuf"), h.end());
}

TEST(EncoderTest, line_protocol_lines_round_trip_values_and_escape_labels)
{
    auto e = make_encoder(Protocol::influx);
    const SeriesName usage = series_name("cgroup_cpu", {"usage", "s", wire::MetricKind::counter});
    const double exact = 0.1 + 0.2;
    e->labels({"ci", "node1", "42", "alice"});
    e->add(usage, exact, k_t);
    e->labels({"", "n 1", "a,b=c\\", ""});
    e->add(usage, -2.5e-10, 5);
    EXPECT_EQ(e->take(), "colmet_cgroup_cpu,cluster=ci,host=node1,job_id=42,user=alice usage_seconds_total="
                         "0.30000000000000004 1700000000123456789\n"
                         "colmet_cgroup_cpu,host=n\\ 1,job_id=a\\,b\\=c\\\\ usage_seconds_total=-2.5e-10 5\n");
    const SeriesName ev = series_name("perfhw", {"page_faults", "1", wire::MetricKind::counter});
    e->labels({"", "h", "1", ""});
    e->add(ev, 7, 1);
    EXPECT_EQ(e->take(), "colmet_perfhw,event=page_faults,host=h,job_id=1 count_total=7 1\n");
}

TEST(EncoderTest, context_labels_go_in_name_order_in_both_protocols)
{
    const std::array<Label, 3> context{{{"account", "physics"}, {"partition", "gpu a"}, {"queue", ""}}};
    const SeriesName ev = series_name("perfhw", {"page_faults", "1", wire::MetricKind::counter});
    auto rw = make_encoder(Protocol::remote_write);
    rw->labels({"ci", "h", "42", "alice", context});
    rw->add(ev, 7, k_t);
    const auto req = decode(rw->take());
    ASSERT_EQ(req.timeseries_size(), 1);
    std::vector<std::string> names;
    for (const auto &l : req.timeseries(0).labels())
        names.push_back(l.name() + "=" + l.value());
    EXPECT_EQ(names,
              (std::vector<std::string>{"__name__=colmet_perfhw_count_total", "account=physics", "cluster=ci",
                                        "event=page_faults", "host=h", "job_id=42", "partition=gpu a", "user=alice"}));
    auto influx = make_encoder(Protocol::influx);
    influx->labels({"", "h", "42", "alice", context});
    influx->add(ev, 7, 1);
    EXPECT_EQ(influx->take(),
              "colmet_perfhw,account=physics,event=page_faults,host=h,job_id=42,partition=gpu\\ a,user=alice "
              "count_total=7 1\n");
}

TEST(EncoderTest, the_context_label_keys_fit_the_encoders_order)
{
    // Labels::context's rule: before "event" or after "gpu", none of the four fixed names.
    for (const auto &k : sched::context_keys()) {
        if (!k.label)
            continue;
        EXPECT_TRUE(k.key < std::string_view("event") || k.key > std::string_view("gpu")) << k.key;
        for (std::string_view fixed : {"cluster", "host", "job_id", "user", "__name__"})
            EXPECT_NE(k.key, fixed);
    }
}

TEST(EncoderTest, protocol_names)
{
    EXPECT_EQ(parse_protocol("remote-write"), Protocol::remote_write);
    EXPECT_EQ(parse_protocol("influx"), Protocol::influx);
    EXPECT_FALSE(parse_protocol("graphite"));
    EXPECT_STREQ(protocol_name(Protocol::influx), "influx");
}

}  // namespace
}  // namespace colmet::collector::tsdb
