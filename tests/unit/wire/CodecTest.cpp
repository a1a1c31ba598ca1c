#include "wire/codec.hpp"

#include "wire/ack.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

using namespace colmet::wire;

namespace {

Message sample_message()
{
    Message m;
    m.kind = MessageKind::sample;
    m.host = "node-1";
    m.job_id = "123_4";
    m.sender = "node-1/42/1";
    m.seq = 7;
    m.time_ns = 1'700'000'000'000'000'000;
    BackendBlock cpu;
    cpu.name = "cgroup_cpu";
    cpu.metrics = {{"usage", "s", MetricKind::counter}, {"nr_periods", "1", MetricKind::counter}};
    cpu.values = {1.5, 3};
    BackendBlock mem;
    mem.name = "cgroup_memory";
    mem.metrics = {{"current", "B", MetricKind::gauge}, {"peak", "B", MetricKind::gauge}};
    mem.values = {209715200, std::numeric_limits<double>::quiet_NaN()};
    mem.status = "memory.peak: No such file or directory";
    m.backends = {cpu, mem};
    return m;
}

std::string hex(const std::string &bytes)
{
    std::string out;
    char buf[4];
    for (unsigned char c : bytes) {
        std::snprintf(buf, sizeof buf, "%02x", c);
        out += buf;
    }
    return out;
}

}  // namespace

TEST(WireCodec, round_trip_keeps_every_field)
{
    Message in = sample_message();
    in.kind = MessageKind::job_start;
    in.dropped = 3;
    in.period_s = 0.5;
    in.ack = 1;
    in.meta = {{"user", "alice"}, {"cgroup", "/oar/alice_123"}, {"cpus", "2"}};
    std::string bytes;
    ASSERT_TRUE(encode(in, bytes));

    Message out;
    auto r = decode(bytes.data(), bytes.size(), out);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(out.version, 1u);
    EXPECT_EQ(out.kind, MessageKind::job_start);
    EXPECT_EQ(out.host, "node-1");
    EXPECT_EQ(out.job_id, "123_4");
    EXPECT_EQ(out.sender, "node-1/42/1");
    EXPECT_EQ(out.seq, 7u);
    EXPECT_EQ(out.time_ns, in.time_ns);
    EXPECT_EQ(out.dropped, 3u);
    EXPECT_DOUBLE_EQ(out.period_s, 0.5);
    EXPECT_EQ(out.ack, 1u);
    EXPECT_EQ(out.meta, in.meta);
    ASSERT_EQ(out.backends.size(), 2u);
    EXPECT_EQ(out.backends[0].name, "cgroup_cpu");
    EXPECT_EQ(out.backends[0].scope, Scope::job);
    EXPECT_EQ(out.backends[0].metrics, in.backends[0].metrics);
    EXPECT_DOUBLE_EQ(out.backends[0].values[0], 1.5);
    EXPECT_DOUBLE_EQ(out.backends[0].values[1], 3);
    EXPECT_DOUBLE_EQ(out.backends[1].values[0], 209715200);
    EXPECT_TRUE(std::isnan(out.backends[1].values[1]));
    EXPECT_EQ(out.backends[1].status, "memory.peak: No such file or directory");
}

TEST(WireCodec, golden_bytes_of_a_minimal_sample)
{
    // Any change to these bytes is a protocol change: bump k_protocol_version
    // and update docs/protocol.md.
    Message m;
    m.host = "n1";
    m.job_id = "42";
    m.sender = "s";
    m.seq = 1;
    m.time_ns = 1000;
    BackendBlock b;
    b.name = "cgroup_cpu";
    b.metrics = {{"usage", "s", MetricKind::counter}};
    b.values = {2};
    m.backends = {b};
    std::string bytes;
    ASSERT_TRUE(encode(m, bytes));
    EXPECT_EQ(hex(bytes),
              "88"                                  // map of 8
              "a17601"                              // "v": 1
              "a46b696e64a673616d706c65"            // "kind": "sample"
              "a4686f7374a26e31"                    // "host": "n1"
              "a36a6f62a23432"                      // "job": "42"
              "a673656e646572a173"                  // "sender": "s"
              "a373657101"                          // "seq": 1
              "a174cd03e8"                          // "t": 1000
              "a86261636b656e647391"                // "backends": [ (1)
              "84"                                  //   map of 4
              "a46e616d65aa6367726f75705f637075"    //   "name": "cgroup_cpu"
              "a573636f7065a36a6f62"                //   "scope": "job"
              "a76d65747269637391"                  //   "metrics": [ (1)
              "93a57573616765a173a7636f756e746572"  //     ["usage", "s", "counter"]
              "a676616c7565739102");                //   "values": [2]
}

TEST(WireCodec, whole_numbers_travel_as_integers_and_fractions_as_floats)
{
    Message m = sample_message();
    m.backends.resize(1);
    m.backends[0].values = {4294967296.0, 0.25};
    std::string bytes;
    ASSERT_TRUE(encode(m, bytes));
    // 2^32 as uint64 (cf 00 00 00 01 00 00 00 00), 0.25 as float64 (cb ...).
    EXPECT_NE(hex(bytes).find("cf0000000100000000"), std::string::npos);
    EXPECT_NE(hex(bytes).find("cb3fd0000000000000"), std::string::npos);
}

TEST(WireCodec, decoder_reuses_storage_and_resets_optional_fields)
{
    Message first = sample_message();
    first.dropped = 9;
    first.meta = {{"user", "bob"}};
    Message second = sample_message();
    second.backends.resize(1);
    std::string a, b;
    ASSERT_TRUE(encode(first, a));
    ASSERT_TRUE(encode(second, b));
    Message out;
    ASSERT_TRUE(decode(a.data(), a.size(), out));
    ASSERT_TRUE(decode(b.data(), b.size(), out));
    EXPECT_EQ(out.dropped, 0u);
    EXPECT_TRUE(out.meta.empty());
    EXPECT_EQ(out.backends.size(), 1u);
    EXPECT_TRUE(out.backends[0].status.empty());
}

TEST(WireCodec, encoder_refuses_messages_outside_the_schema)
{
    auto expect_invalid = [](const Message &m, const std::string &needle) {
        std::string bytes;
        auto r = encode(m, bytes);
        ASSERT_FALSE(r);
        EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
    };
    Message m = sample_message();
    m.job_id = "../../etc/x";
    expect_invalid(m, "job");
    m = sample_message();
    m.host = "";
    expect_invalid(m, "host");
    m = sample_message();
    m.backends[0].values.pop_back();
    expect_invalid(m, "2 metrics but 1 values");
    m = sample_message();
    m.backends[1].name = "cgroup_cpu";
    expect_invalid(m, "appears twice");
    m = sample_message();
    m.backends[0].values[0] = std::numeric_limits<double>::infinity();
    expect_invalid(m, "not finite");
    m = sample_message();
    m.backends[0].metrics[1].name = "usage";
    expect_invalid(m, "appears twice");
    m = sample_message();
    m.meta = {{"Bad-Key", "x"}};
    expect_invalid(m, "meta key");
}

TEST(WireCodec, a_message_at_the_bounds_encodes_and_decodes)
{
    Message m = sample_message();
    m.backends.clear();
    for (size_t b = 0; b < k_max_backends; ++b) {
        BackendBlock blk;
        blk.name = "b" + std::to_string(b);
        for (size_t i = 0; i < 16; ++i) {
            blk.metrics.push_back({"metric_" + std::to_string(i), "B", MetricKind::counter});
            blk.values.push_back(static_cast<double>(i) * 1.5);
        }
        m.backends.push_back(blk);
    }
    std::string bytes;
    ASSERT_TRUE(encode(m, bytes));
    Message out;
    auto r = decode(bytes.data(), bytes.size(), out);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(out.backends.size(), k_max_backends);
}

TEST(WireCodec, an_acknowledged_message_carries_base_that_a_resend_can_update_in_place)
{
    Message in = sample_message();  // seq 7
    in.version = k_acked_protocol_version;
    in.ack = 1;
    in.base = 2;
    std::string bytes;
    size_t base_at = 0;
    ASSERT_TRUE(encode(in, bytes, &base_at));
    ASSERT_GT(base_at, 0u);
    Message out;
    ASSERT_TRUE(decode(bytes.data(), bytes.size(), out));
    EXPECT_TRUE(wants_ack(out));
    EXPECT_EQ(out.base, 2u);
    const size_t size = bytes.size();
    patch_base(bytes, base_at, 5);
    EXPECT_EQ(bytes.size(), size);  // fixed width: the frame keeps its length
    ASSERT_TRUE(decode(bytes.data(), bytes.size(), out));
    EXPECT_EQ(out.base, 5u);
    EXPECT_EQ(out.seq, 7u);

    // Version 1: ack is reserved and means nothing; base cannot be sent.
    in.version = 1;
    EXPECT_FALSE(encode(in, bytes));
    in.base = 0;
    ASSERT_TRUE(encode(in, bytes));
    ASSERT_TRUE(decode(bytes.data(), bytes.size(), out));
    EXPECT_FALSE(wants_ack(out));
    in.version = 2;
    in.base = 8;
    EXPECT_FALSE(encode(in, bytes));  // base beyond seq
    in.version = 3;
    in.base = 0;
    EXPECT_FALSE(encode(in, bytes));
}

TEST(WireAck, frames_name_their_sender_exactly)
{
    const std::string frame = encode_ack("n1/42/7", 0x0102030405060708ULL);
    EXPECT_EQ(frame, std::string("n1/42/7\0\x02\x01\x02\x03\x04\x05\x06\x07\x08", 17));
    EXPECT_EQ(frame.substr(0, ack_topic("n1/42/7").size()), ack_topic("n1/42/7"));
    EXPECT_EQ(decode_ack(frame, "n1/42/7"), 0x0102030405060708ULL);
    // Another sender whose id is a prefix or an extension of this one's.
    EXPECT_EQ(decode_ack(frame, "n1/42/"), std::nullopt);
    EXPECT_EQ(decode_ack(encode_ack("n1/42/70", 1), "n1/42/7"), std::nullopt);
    // Truncated, too long, another version.
    EXPECT_EQ(decode_ack(frame.substr(0, frame.size() - 1), "n1/42/7"), std::nullopt);
    EXPECT_EQ(decode_ack(frame + "x", "n1/42/7"), std::nullopt);
    std::string v3 = frame;
    v3[8] = 3;
    EXPECT_EQ(decode_ack(v3, "n1/42/7"), std::nullopt);
    EXPECT_EQ(decode_ack("", "n1/42/7"), std::nullopt);
}

// A key named twice for one message goes once, at its last value (before,
// encode() refused the whole message: a job_start lost with its metadata).
TEST(WireCodec, meta_keeps_the_latest_value_of_each_key)
{
    std::vector<std::pair<std::string, std::string>> meta = {{"cgroup", "/a"},    {"cpus", "0"}, {"user", "alice"},
                                                             {"cgroups", "/a/b"}, {"cpus", "4"}, {"cpus", "8"}};
    keep_latest_meta(meta);
    EXPECT_EQ(meta, (std::vector<std::pair<std::string, std::string>>{
                        {"cgroup", "/a"}, {"user", "alice"}, {"cgroups", "/a/b"}, {"cpus", "8"}}));
    std::vector<std::pair<std::string, std::string>> none;
    keep_latest_meta(none);
    EXPECT_TRUE(none.empty());

    Message msg = sample_message();
    msg.kind = MessageKind::job_start;
    msg.meta = {{"cpus", "0"}, {"cpus", "2"}};
    std::string bytes;
    EXPECT_FALSE(encode(msg, bytes));  // what the sampler hit
    keep_latest_meta(msg.meta);
    EXPECT_TRUE(encode(msg, bytes));
}
