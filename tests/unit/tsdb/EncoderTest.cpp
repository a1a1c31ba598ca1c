// The request bodies of the two protocols, read back: remote write through
// snappy and protobuf, line protocol as text.
#include "collector/sinks/tsdb/Encoder.hpp"

#include "remote.pb.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <cmath>

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

TEST(EncoderTest, remote_write_body_of_many_fragments_is_one_snappy_block)
{
    // The body is compressed 64 KiB at a time while it is encoded: a batch
    // of several fragments, points straddling their borders, must still be
    // one valid block holding every point in order, and the very bytes
    // snappy makes of the whole.
    auto e = make_encoder(Protocol::remote_write);
    const SeriesName usage = series_name("cgroup_cpu", {"usage", "s", wire::MetricKind::counter});
    constexpr int k_points = 7001;  // about 110 bytes each: a dozen fragments
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < k_points; ++i) {
            const std::string host = "node" + std::to_string(i % 3), job = std::to_string(i / 61);
            e->labels({"ci", host, job, "alice"});
            e->add(usage, i * 0.5 + round, k_t + int64_t{i} * 1'000'000);
        }
        const std::string body = e->take();
        std::string raw;
        ASSERT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
        EXPECT_GT(raw.size(), size_t{8} << 16);
        std::string whole;
        snappy::Compress(raw.data(), raw.size(), &whole);
        EXPECT_EQ(body, whole);
        prompb::WriteRequest req;
        ASSERT_TRUE(req.ParseFromString(raw));
        ASSERT_EQ(req.timeseries_size(), k_points);
        for (int i = 0; i < k_points; ++i) {
            ASSERT_EQ(req.timeseries(i).samples_size(), 1);
            EXPECT_EQ(req.timeseries(i).samples(0).value(), i * 0.5 + round);
            EXPECT_EQ(req.timeseries(i).samples(0).timestamp(), 1'700'000'000'123 + i);
        }
    }
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

TEST(EncoderTest, protocol_names)
{
    EXPECT_EQ(parse_protocol("remote-write"), Protocol::remote_write);
    EXPECT_EQ(parse_protocol("influx"), Protocol::influx);
    EXPECT_FALSE(parse_protocol("graphite"));
    EXPECT_STREQ(protocol_name(Protocol::influx), "influx");
}

}  // namespace
}  // namespace colmet::collector::tsdb
