// Every rejection path of the decoder, each checked for a precise message.
#include "MsgpackBuilder.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

#include <limits>

using namespace colmet::wire;
namespace mp = colmet::test::mp;

namespace {

std::string decode_error(const std::string &bytes)
{
    Message out;
    auto r = decode(bytes.data(), bytes.size(), out);
    if (r)
        return "<accepted>";
    EXPECT_EQ(r.error().code(), colmet::Errc::parse);
    return r.error().message();
}

std::string with_backend(const mp::Entries &backend)
{
    return mp::map(mp::replace(mp::valid_message_entries(), "backends", mp::array({mp::map(backend)})));
}

#define EXPECT_REJECTED(bytes, needle)                                                                                 \
    do {                                                                                                               \
        std::string msg_ = decode_error(bytes);                                                                        \
        EXPECT_NE(msg_.find(needle), std::string::npos) << "error was: " << msg_;                                      \
    } while (0)

}  // namespace

TEST(WireDecode, the_valid_reference_message_is_accepted)
{
    EXPECT_EQ(decode_error(mp::map(mp::valid_message_entries())), "<accepted>");
}

TEST(WireDecode, rejects_empty_oversized_truncated_and_trailing_bytes)
{
    EXPECT_REJECTED(std::string(), "empty message");
    EXPECT_REJECTED(std::string(k_max_message_bytes + 1, '\x90'), "exceeds the limit");
    std::string valid = mp::map(mp::valid_message_entries());
    for (size_t cut = 1; cut < valid.size(); ++cut)
        EXPECT_REJECTED(valid.substr(0, cut), "truncated");
    EXPECT_REJECTED(valid + "\x01", "trailing bytes");
}

TEST(WireDecode, rejects_invalid_msgpack_and_non_map_roots)
{
    EXPECT_REJECTED(std::string("\xc1", 1), "not valid msgpack");  // 0xc1 is never used
    EXPECT_REJECTED(mp::array({mp::uint(1)}), "message: expected a map, got array");
    EXPECT_REJECTED(mp::str("hello"), "expected a map, got string");
}

TEST(WireDecode, rejects_huge_declared_lengths_without_allocating_them)
{
    // Every declared length is checked against the schema's limit where it
    // is read, before anything is allocated for it: array32 and map32
    // headers declaring 2^32-1 elements or entries.
    const std::string huge_array("\xdd\xff\xff\xff\xff", 5), huge_map("\xdf\xff\xff\xff\xff", 5);
    EXPECT_REJECTED(huge_map, "message: map of 4294967295 entries exceeds the limit of 16");
    EXPECT_REJECTED(huge_array, "message: expected a map, got array");
    auto e = mp::valid_message_entries();
    EXPECT_REJECTED(mp::map(mp::replace(e, "backends", huge_array)),
                    "backends: array of 4294967295 elements exceeds the limit of 64");
    auto b = mp::valid_backend_entries();
    EXPECT_REJECTED(with_backend(mp::replace(b, "metrics", huge_array)),
                    "backends[0].metrics: array of 4294967295 elements exceeds the limit of 1024");
    EXPECT_REJECTED(with_backend(mp::replace(b, "values", huge_array)),
                    "backends[0].values: array of 4294967295 elements exceeds the limit of 1024");
    EXPECT_REJECTED(mp::map(mp::replace(e, "backends", mp::array({huge_map}))),
                    "backends[0]: map of 4294967295 entries exceeds the limit of 8");
    e.emplace_back("meta", huge_map);
    EXPECT_REJECTED(mp::map(e), "meta: map of 4294967295 entries exceeds the limit of 64");
    // A str32 is never copied (strings are referenced in place): its declared
    // length is checked against the bytes actually present.
    EXPECT_REJECTED(std::string("\x81\xdb\xff\xff\xff\xff", 6), "truncated");
    // bin and ext are never valid, whatever their size.
    EXPECT_REJECTED(std::string("\x81\xa1v\xc6\x00\x00\x00\x05xxxxx", 13),
                    "v: expected an unsigned integer, got binary");
    EXPECT_REJECTED(std::string("\x81\xa1v\xd4\x01\x00", 6), "v: expected an unsigned integer, got extension");
    EXPECT_REJECTED(std::string("\x81\xa1v\xc7\xff\x01", 6), "truncated");  // ext8 declaring 255 bytes, none there
}

TEST(WireDecode, rejects_nesting_deeper_than_the_schema)
{
    // The schema is at most 5 levels deep (message, backends, backend,
    // metrics, descriptor); anything deeper is a wrong type where it starts.
    std::string deep;
    for (int i = 0; i < 64; ++i)
        deep += "\x91";
    deep += "\x01";
    EXPECT_REJECTED(deep, "message: expected a map, got array");
    auto b = mp::valid_backend_entries();
    EXPECT_REJECTED(with_backend(mp::replace(b, "values", mp::array({deep}))),
                    "backends[0].values[0]: expected a number or nil, got array");
}

TEST(WireDecode, rejects_unknown_duplicate_and_missing_keys)
{
    auto e = mp::valid_message_entries();
    e.push_back({"surprise", mp::uint(1)});
    EXPECT_REJECTED(mp::map(e), "unknown key \"surprise\"");
    e = mp::valid_message_entries();
    e.push_back({"seq", mp::uint(8)});
    EXPECT_REJECTED(mp::map(e), "key \"seq\" appears twice");
    for (const char *key : {"v", "kind", "host", "job", "sender", "seq", "t", "backends"})
        EXPECT_REJECTED(mp::map(mp::without(mp::valid_message_entries(), key)),
                        std::string("missing required key \"") + key + "\"");
    // A non-string key.
    std::string bytes = "\x81\x01\x01";
    EXPECT_REJECTED(bytes, "message key: expected a string, got integer");
}

TEST(WireDecode, rejects_wrong_types_and_values_of_top_level_fields)
{
    auto with = [](const std::string &key, const std::string &value) {
        return mp::map(mp::replace(mp::valid_message_entries(), key, value));
    };
    EXPECT_REJECTED(with("v", mp::uint(3)), "unsupported protocol version 3 (this side speaks 1 to 2)");
    EXPECT_REJECTED(with("v", mp::uint(0)), "unsupported protocol version 0");
    EXPECT_REJECTED(with("v", mp::str("1")), "v: expected an unsigned integer, got string");
    EXPECT_REJECTED(with("kind", mp::str("hello")), "kind: must be \"sample\"");
    EXPECT_REJECTED(with("kind", mp::uint(0)), "kind: expected a string");
    EXPECT_REJECTED(with("host", mp::str("")), "host: must be 1 to 128");
    EXPECT_REJECTED(with("host", mp::str("a/b")), "host: must be");
    EXPECT_REJECTED(with("host", mp::str("bad\nhost")), "host: must be");
    EXPECT_REJECTED(with("host", mp::str(std::string(200, 'h'))), "exceeds the limit of 128");
    EXPECT_REJECTED(with("job", mp::str("../../etc/x")), "job: must be");
    EXPECT_REJECTED(with("job", mp::uint(12)), "job: expected a string, got integer");
    EXPECT_REJECTED(with("sender", mp::str("")), "sender: must be");
    EXPECT_REJECTED(with("seq", mp::sint(-1)), "seq: expected an unsigned integer");
    EXPECT_REJECTED(with("t", mp::dbl(1.5)), "t: expected an unsigned integer, got float");
    EXPECT_REJECTED(with("t", mp::uint(std::numeric_limits<uint64_t>::max())), "t: timestamp out of range");
    EXPECT_REJECTED(with("backends", mp::map({})), "backends: expected an array, got map");
    auto e = mp::valid_message_entries();
    e.push_back({"period", mp::dbl(-1)});
    EXPECT_REJECTED(mp::map(e), "period: must be a finite number");
    e = mp::valid_message_entries();
    e.push_back({"period", mp::str("5")});
    EXPECT_REJECTED(mp::map(e), "period: expected a number");
    e = mp::valid_message_entries();
    e.push_back({"dropped", mp::boolean(true)});
    EXPECT_REJECTED(mp::map(e), "dropped: expected an unsigned integer, got boolean");
}

TEST(WireDecode, rejects_bad_meta)
{
    auto with_meta = [](const std::string &meta) {
        auto e = mp::valid_message_entries();
        e.push_back({"meta", meta});
        return mp::map(e);
    };
    EXPECT_REJECTED(with_meta(mp::array({})), "meta: expected a map");
    EXPECT_REJECTED(with_meta(mp::map({{"User", mp::str("x")}})), "key \"User\" must be");
    EXPECT_REJECTED(with_meta(mp::map({{"user", mp::uint(1)}})), "meta.user: expected a string");
    EXPECT_REJECTED(with_meta(mp::map({{"user", mp::str("a")}, {"user", mp::str("b")}})), "appears twice");
    EXPECT_REJECTED(with_meta(mp::map({{"user", mp::str("a\x01")}})), "control characters");
}

TEST(WireDecode, rejects_bad_backend_blocks)
{
    auto b = mp::valid_backend_entries();
    EXPECT_REJECTED(with_backend(mp::replace(b, "name", mp::str("Bad Name"))), "backends[0].name: must be");
    EXPECT_REJECTED(with_backend(mp::replace(b, "scope", mp::str("galaxy"))), "backends[0].scope: must be");
    EXPECT_REJECTED(with_backend(mp::without(b, "values")), "missing required key \"values\"");
    EXPECT_REJECTED(with_backend(mp::without(b, "name")), "missing required key \"name\"");
    auto extra = b;
    extra.push_back({"colour", mp::str("red")});
    EXPECT_REJECTED(with_backend(extra), "backends[0]: unknown key \"colour\"");
    EXPECT_REJECTED(with_backend(mp::replace(b, "values", mp::array({mp::dbl(1), mp::dbl(2)}))),
                    "1 metrics but 2 values");
    EXPECT_REJECTED(with_backend(mp::replace(b, "values", mp::array({mp::str("1")}))),
                    "backends[0].values[0]: expected a number or nil, got string");
    EXPECT_REJECTED(
        with_backend(mp::replace(b, "values", mp::array({mp::dbl(std::numeric_limits<double>::infinity())}))),
        "not finite");
    EXPECT_REJECTED(with_backend(mp::replace(b, "metrics", mp::array({mp::str("usage")}))),
                    "backends[0].metrics[0]: expected an array, got string");
    EXPECT_REJECTED(with_backend(mp::replace(b, "metrics", mp::array({mp::array({mp::str("usage"), mp::str("s")})}))),
                    "expected [name, unit, kind]");
    EXPECT_REJECTED(with_backend(mp::replace(
                        b, "metrics", mp::array({mp::array({mp::str("usage"), mp::str("s"), mp::str("rate")})}))),
                    "backends[0].metrics[0].kind: must be \"counter\" or \"gauge\"");
    EXPECT_REJECTED(
        with_backend(mp::replace(b, "metrics", mp::array({mp::array({mp::str(""), mp::str("s"), mp::str("gauge")})}))),
        "metrics[0].name: must be");
    EXPECT_REJECTED(
        with_backend(mp::replace(
            b, "metrics", mp::array({mp::array({mp::str("x"), mp::str("very-long-unit-name"), mp::str("gauge")})}))),
        "metrics[0].unit");
    auto two = mp::replace(b, "metrics",
                           mp::array({mp::array({mp::str("u"), mp::str("s"), mp::str("gauge")}),
                                      mp::array({mp::str("u"), mp::str("s"), mp::str("gauge")})}));
    two = mp::replace(two, "values", mp::array({mp::nil(), mp::nil()}));
    EXPECT_REJECTED(with_backend(two), "\"u\" appears twice");

    auto msg = mp::replace(mp::valid_message_entries(), "backends", mp::array({mp::map(b), mp::map(b)}));
    EXPECT_REJECTED(mp::map(msg), "backends[1].name: \"cgroup_cpu\" appears twice");
}

TEST(WireDecode, accepts_every_integer_width_and_nil_values)
{
    auto b = mp::replace(mp::valid_backend_entries(), "metrics",
                         mp::array({mp::array({mp::str("a"), mp::str("1"), mp::str("gauge")}),
                                    mp::array({mp::str("b"), mp::str("1"), mp::str("gauge")}),
                                    mp::array({mp::str("c"), mp::str("1"), mp::str("gauge")}),
                                    mp::array({mp::str("d"), mp::str("1"), mp::str("gauge")})}));
    b = mp::replace(b, "values", mp::array({mp::uint(5), mp::sint(-300000), mp::nil(), mp::uint(1ULL << 40)}));
    std::string bytes = with_backend(b);
    Message out;
    auto r = decode(bytes.data(), bytes.size(), out);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(out.backends[0].values[0], 5);
    EXPECT_EQ(out.backends[0].values[1], -300000);
    EXPECT_TRUE(is_missing(out.backends[0].values[2]));
    EXPECT_EQ(out.backends[0].values[3], 1099511627776.0);
}

TEST(WireDecode, duplicate_names_are_caught_whatever_was_decoded_before)
{
    // The decoder skips the uniqueness check when a slot's names did not
    // change: make sure neither a failed decode nor a previous valid one
    // lets duplicates through.
    auto metric = [](const char *n) { return mp::array({mp::str(n), mp::str("1"), mp::str("gauge")}); };
    auto backend = [&](const char *a, const char *b) {
        auto e = mp::replace(mp::valid_backend_entries(), "metrics", mp::array({metric(a), metric(b)}));
        return with_backend(mp::replace(e, "values", mp::array({mp::nil(), mp::nil()})));
    };
    Message out;
    std::string dup = backend("u", "u"), good = backend("u", "v");
    EXPECT_FALSE(decode(dup.data(), dup.size(), out));
    EXPECT_FALSE(decode(dup.data(), dup.size(), out)) << "second time, same bytes";
    EXPECT_TRUE(decode(good.data(), good.size(), out));
    EXPECT_TRUE(decode(good.data(), good.size(), out));
    EXPECT_FALSE(decode(dup.data(), dup.size(), out)) << "after a valid message with one name changed";
    std::string dup2 = backend("v", "v");
    EXPECT_TRUE(decode(good.data(), good.size(), out));
    EXPECT_FALSE(decode(dup2.data(), dup2.size(), out));
}

TEST(WireDecode, a_reused_message_takes_new_units_kinds_and_values_of_unchanged_names)
{
    // The decoder skips descriptors whose bytes equal those it decoded into
    // the same slot before: a change of unit or kind alone must still reach
    // the message, and values are always decoded.
    auto backend = [&](const char *unit, const char *kind, uint64_t value) {
        auto e = mp::replace(mp::valid_backend_entries(), "metrics",
                             mp::array({mp::array({mp::str("usage"), mp::str(unit), mp::str(kind)})}));
        return with_backend(mp::replace(e, "values", mp::array({mp::uint(value)})));
    };
    Message out;
    std::string first = backend("s", "counter", 1);
    ASSERT_TRUE(decode(first.data(), first.size(), out));
    ASSERT_TRUE(out.backends[0].metrics_wire);
    EXPECT_FALSE(out.backends[0].metrics_wire->empty());
    const auto kept = out.backends[0].metrics_wire;
    std::string more = backend("s", "counter", 2);
    ASSERT_TRUE(decode(more.data(), more.size(), out));
    EXPECT_EQ(out.backends[0].values[0], 2);
    EXPECT_EQ(out.backends[0].metrics_wire, kept);  // the same bytes, kept: segments compare pointers
    std::string unit = backend("ns", "counter", 3);
    ASSERT_TRUE(decode(unit.data(), unit.size(), out));
    EXPECT_EQ(out.backends[0].metrics[0].unit, "ns");
    ASSERT_TRUE(out.backends[0].metrics_wire);
    EXPECT_NE(out.backends[0].metrics_wire, kept);
    // what the first message's slot was made of is unchanged
    EXPECT_EQ(*kept, mp::array({mp::array({mp::str("usage"), mp::str("s"), mp::str("counter")})}));
    EXPECT_EQ(out.backends[0].values[0], 3);
    std::string kind = backend("ns", "gauge", 4);
    ASSERT_TRUE(decode(kind.data(), kind.size(), out));
    EXPECT_EQ(out.backends[0].metrics[0].kind, MetricKind::gauge);
    EXPECT_EQ(out.backends[0].values[0], 4);
    // A bad value after the shortcut still fails and leaves no slot behind.
    auto e = mp::replace(mp::valid_backend_entries(), "metrics",
                         mp::array({mp::array({mp::str("usage"), mp::str("ns"), mp::str("gauge")})}));
    std::string bad = with_backend(mp::replace(e, "values", mp::array({mp::str("x")})));
    EXPECT_FALSE(decode(bad.data(), bad.size(), out));
    EXPECT_TRUE(out.backends.empty());
}

TEST(WireDecode, signed_encodings_of_non_negative_integers_read_as_unsigned)
{
    // int8 5 (0xd0 0x05) is an unsigned integer for seq, as msgpack-c reads it.
    auto e = mp::valid_message_entries();
    std::string bytes = mp::map(mp::replace(e, "seq", std::string("\xd0\x05", 2)));
    Message out;
    auto r = decode(bytes.data(), bytes.size(), out);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(out.seq, 5u);
}

TEST(WireDecode, base_needs_version_2_and_may_not_pass_seq)
{
    auto entries = mp::valid_message_entries();  // seq 7
    auto v2 = mp::replace(entries, "v", mp::uint(2));
    auto plus = [](mp::Entries e, const std::string &key, const std::string &value) {
        e.emplace_back(key, value);
        return mp::map(e);
    };
    EXPECT_REJECTED(plus(entries, "base", mp::uint(3)), "base: needs protocol version 2");
    EXPECT_REJECTED(plus(v2, "base", mp::uint(8)), "base: must not exceed seq (7)");
    EXPECT_REJECTED(plus(v2, "base", mp::str("3")), "base: expected an unsigned integer");
    auto twice = v2;
    twice.emplace_back("base", mp::uint(1));
    EXPECT_REJECTED(plus(twice, "base", mp::uint(1)), "key \"base\" appears twice");
    Message out;
    const std::string ok = plus(mp::replace(v2, "ack", mp::uint(1)), "base", mp::uint(7));
    ASSERT_TRUE(decode(ok.data(), ok.size(), out));
    EXPECT_EQ(out.base, 7u);
    EXPECT_EQ(out.version, 2u);
}
