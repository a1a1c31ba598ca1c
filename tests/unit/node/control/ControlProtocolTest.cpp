// Request, answer and legacy-message parsing and validation, and framing.
#include "node/control/ControlProtocol.hpp"

#include "MsgpackBuilder.hpp"
#include "ctl/CtlFormat.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace colmet;
using namespace colmet::node::control;
namespace mp = colmet::test::mp;

namespace {

template <typename T>
std::string error_of(const Result<T> &r)
{
    return r ? std::string("(accepted)") : r.error().message();
}

}  // namespace

TEST(ControlRequestTest, round_trips_every_field)
{
    ControlRequest r;
    r.job_id = "123_4";
    r.period_s = 0.5;
    r.perfhw_events = std::vector<std::string>{"task_clock", "page_faults"};
    r.perfhw = PerfhwAction::pause;
    r.sample_now = true;
    r.context = {{"job_name", "run 7"}, {"host_memory_mib", "2048"}};
    auto back = decode_request(encode_request(r));
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, r);
}

TEST(ControlRequestTest, rejects_a_bad_context_naming_it)
{
    auto rejection = [](const std::string &body) { return error_of(decode_request(body)); };
    auto with_context = [](const std::vector<std::pair<std::string, std::string>> &items) {
        ControlRequest r;
        r.context = items;
        return encode_request(r);
    };
    EXPECT_EQ(rejection(with_context({{"colour", "blue"}})).substr(0, 32), "context 'colour=blue': unknown k");
    EXPECT_EQ(rejection(with_context({{"job_nodes", "many"}})),
              "context job_nodes 'many': expected a non-negative whole number");
    EXPECT_EQ(rejection(with_context({{"job_name", "\n"}})), "context job_name: empty value");
    EXPECT_EQ(rejection(with_context({{"account", "a"}, {"account", "b"}})), "context: key \"account\" given twice");
    std::vector<std::pair<std::string, std::string>> many;
    many.reserve(13);
    for (int i = 0; i < 13; ++i)
        many.emplace_back("job_name", "x");
    EXPECT_EQ(rejection(with_context(many)).substr(0, 36), "context: expected a map of 1 to 12 K");
    // {"v": 1, "context": {}} and {"v": 1, "context": ["x"]} and {"v": 1, "context": {"job_name": 1}}
    EXPECT_EQ(rejection(std::string("\x82\xa1v\x01\xa7"
                                    "context\x80",
                                    13))
                  .substr(0, 26),
              "context: expected a map of");
    EXPECT_EQ(rejection("\x82\xa1v\x01\xa7"
                        "context\x91\xa1x")
                  .substr(0, 26),
              "context: expected a map of");
    EXPECT_EQ(rejection("\x82\xa1v\x01\xa7"
                        "context\x81\xa8job_name\x01"),
              "context job_name: expected a string");
}

TEST(ControlRequestTest, sample_now_must_be_a_boolean)
{
    // {"v": 1, "sample_now": "yes"}
    const std::string body = "\x82\xa1v\x01\xaasample_now\xa3yes";
    auto r = decode_request(body);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(), "sample_now: expected true or false");
    // {"v": 1, "sample_now": false}
    auto off = decode_request(std::string("\x82\xa1v\x01\xaasample_now\xc2", 16));
    ASSERT_TRUE(off) << off.error().message();
    EXPECT_FALSE(off->sample_now);
}

TEST(ControlRequestTest, an_empty_request_asks_for_status_only)
{
    auto back = decode_request(encode_request(ControlRequest{}));
    ASSERT_TRUE(back);
    EXPECT_FALSE(back->period_s);
    EXPECT_FALSE(back->perfhw_events);
    EXPECT_EQ(back->perfhw, PerfhwAction::none);
}

TEST(ControlRequestTest, splits_event_lists_like_the_command_line)
{
    auto r = decode_request(mp::map(
        {{"v", mp::uint(1)},
         {"perfhw_events", mp::array({mp::str("task_clock,page_faults"), mp::str("context_switches msr/tsc/")})}}));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r->perfhw_events,
              (std::vector<std::string>{"task_clock", "page_faults", "context_switches", "msr/tsc/"}));
}

TEST(ControlRequestTest, accepts_periods_at_the_bounds_and_integer_periods)
{
    for (const auto &v : {mp::dbl(0.1), mp::dbl(3600), mp::uint(2)}) {
        auto r = decode_request(mp::map({{"v", mp::uint(1)}, {"sample_period", v}}));
        ASSERT_TRUE(r) << r.error().message();
    }
}

TEST(ControlRequestTest, rejects_bad_periods_naming_the_field)
{
    for (const auto &v : {mp::dbl(0.05), mp::dbl(0), mp::dbl(-1), mp::dbl(3600.5), mp::dbl(NAN), mp::dbl(INFINITY),
                          mp::str("1"), mp::nil()}) {
        auto r = decode_request(mp::map({{"v", mp::uint(1)}, {"sample_period", v}}));
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code(), Errc::invalid);
        EXPECT_NE(r.error().message().find("sample_period"), std::string::npos) << r.error().message();
    }
}

TEST(ControlRequestTest, rejects_malformed_requests)
{
    struct Case {
        std::string bytes;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {mp::map({}), "missing protocol version"},
        {mp::map({{"v", mp::uint(2)}}), "version 1"},
        {mp::map({{"v", mp::str("1")}}), "version 1"},
        {mp::map({{"v", mp::uint(1)}, {"v", mp::uint(1)}}), "key \"v\" given twice"},
        {std::string("\x81\x01\x01", 3), "request keys must be strings"},
        {mp::map({{"v", mp::uint(1)}, {"bad\x01key", mp::uint(1)}}), "unknown key \"(not printable)\""},
        {mp::map({{"v", mp::uint(1)}, {"sample_periods", mp::dbl(1)}}), "unknown key \"sample_periods\""},
        {mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::str("task_clock")}}), "expected an array"},
        {mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::array({})}}), "no event"},
        {mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::array({mp::str(" , ")})}}), "no event"},
        {mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::array({mp::uint(3)})}}), "perfhw_events[0]"},
        {mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::array({mp::str("a,b,a")})}}), "perfhw_events"},
        {mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::array({mp::str("bad\x01name")})}}), "printable"},
        {mp::map({{"v", mp::uint(1)}, {"perfhw", mp::str("stop")}}), "\"pause\" or \"resume\""},
        {mp::map({{"v", mp::uint(1)}, {"job", mp::str("")}}), "job:"},
        {mp::map({{"v", mp::uint(1)}, {"job", mp::uint(42)}}), "job:"},
        {mp::map({{"v", mp::uint(1)}, {"job", mp::str(std::string(129, 'x'))}}), "job:"},
        {mp::array({mp::uint(1)}), "expected a msgpack map"},
        {mp::map({{"v", mp::uint(1)}}) + "x", "trailing"},
        {mp::map({{"v", mp::uint(1)}, {"sample_period", mp::dbl(1)}}).substr(0, 5), "truncated"},
        {"GET / HTTP/1.0\r\n\r\n", ""},
        {std::string("\xc1", 1), ""},
        {"", "empty"},
    };
    for (const auto &c : cases) {
        auto r = decode_request(c.bytes);
        ASSERT_FALSE(r) << "accepted: " << c.expect;
        EXPECT_NE(error_of(r).find(c.expect), std::string::npos) << error_of(r) << " / wanted: " << c.expect;
    }
}

TEST(ControlRequestTest, bounds_the_number_of_events)
{
    std::vector<std::string> many;
    many.reserve(65);
    for (int i = 0; i < 65; ++i)
        many.push_back(mp::str("e" + std::to_string(i)));
    auto r = decode_request(mp::map({{"v", mp::uint(1)}, {"perfhw_events", mp::array(many)}}));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("more than 64"), std::string::npos) << r.error().message();
}

TEST(ControlRequestTest, refuses_oversized_declared_sizes_without_allocating_them)
{
    // A str32 header claiming 4 GiB inside a tiny body.
    std::string bytes = mp::map({{"v", mp::uint(1)}}).substr(0, 1) + std::string("\xdb\xff\xff\xff\xff", 5);
    bytes[0] = '\x81';
    EXPECT_FALSE(decode_request(bytes));
}

TEST(ControlAnswerTest, round_trips_accepted_and_rejected_answers)
{
    ControlAnswer a;
    a.accepted = true;
    a.changed = {"sample_period", "perfhw_events"};
    a.state =
        ControlState{"42", 0.5, "counting", {"task_clock"}, 12, 3, "tcp://127.0.0.1:5556", "acknowledged", 9, 3, 2};
    auto back = decode_answer(encode_answer(a));
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, a);

    ControlAnswer no = ControlAnswer::reject(Rejection::invalid, "perfhw events: unknown event 'foo'");
    auto back_no = decode_answer(encode_answer(no));
    ASSERT_TRUE(back_no);
    EXPECT_EQ(*back_no, no);
    EXPECT_FALSE(back_no->state);
}

TEST(ControlAnswerTest, cuts_long_reasons)
{
    auto a = ControlAnswer::reject(Rejection::failed, std::string(5000, 'x'));
    EXPECT_EQ(a.reason.size(), k_max_reason_length);
}

TEST(ControlAnswerTest, an_answer_needs_accepted)
{
    EXPECT_EQ(error_of(decode_answer(mp::map({{"v", mp::uint(1)}}))), "answer without \"accepted\"");
    EXPECT_FALSE(decode_answer("garbage"));
    EXPECT_EQ(error_of(decode_answer(std::string("\x81\x01\xc3", 3))), "answer keys must be strings");
    EXPECT_EQ(error_of(decode_answer(mp::map({{"accepted", mp::uint(1)}}))), "accepted: expected a boolean");
    EXPECT_EQ(error_of(decode_answer(mp::map({{"accepted", mp::boolean(true)}, {"state", mp::uint(1)}}))),
              "state: expected a map");
    EXPECT_EQ(
        error_of(decode_answer(mp::map({{"accepted", mp::boolean(true)}, {"state", std::string("\x81\x01\x01", 3)}}))),
        "state: keys are strings");
}

TEST(LegacyConfigureTest, accepts_the_original_configure_message)
{
    auto r = decode_legacy_configure(
        mp::map({{"sample_period", mp::str("1.5")}, {"perfhw_metrics", mp::str("cache_ll,emulation_faults")}}));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r->period_s, 1.5);
    EXPECT_EQ(*r->perfhw_events, (std::vector<std::string>{"cache_ll", "emulation_faults"}));
    EXPECT_EQ(r->perfhw, PerfhwAction::none);
}

TEST(LegacyConfigureTest, accepts_either_key_alone)
{
    EXPECT_TRUE(decode_legacy_configure(mp::map({{"sample_period", mp::str("2")}})));
    EXPECT_TRUE(decode_legacy_configure(mp::map({{"perfhw_metrics", mp::str("task_clock")}})));
}

TEST(LegacyConfigureTest, rejects_what_crashed_the_original)
{
    const std::vector<std::string> bad = {
        mp::map({}),
        mp::map({{"sample_period", mp::dbl(1.5)}}),  // not a string
        mp::map({{"sample_period", mp::str("abc")}}),
        mp::map({{"sample_period", mp::str("0")}}),  // division by zero in the original
        mp::map({{"sample_period", mp::str("-5")}}),
        mp::map({{"sample_period", mp::str("1.5s")}}),
        mp::map({{"sample_period", mp::str("")}}),
        mp::map({{"perfhw_metrics", mp::str("")}}),
        mp::map({{"sample_period", mp::str("1")}, {"extra", mp::str("x")}}),
        mp::dbl(1.5),  // the earliest revision's bare float
        "\xff\xff garbage",
    };
    for (const auto &b : bad)
        EXPECT_FALSE(decode_legacy_configure(b));
}

TEST(LegacyConfigureTest, says_which_key_is_wrong)
{
    const std::vector<std::pair<std::string, std::string>> cases = {
        {mp::map({{"sample_period", mp::str("1")}, {"sample_period", mp::str("2")}}),
         "configure message: key \"sample_period\" given twice"},
        {std::string("\x81\x01\xa1\x31", 4), "configure message: keys must be strings"},
        {mp::map({{"sample_period", mp::dbl(1.5)}}),
         "configure message: the value of \"sample_period\" must be a string"},
        {mp::map({{"sample_period", mp::str("1")}, {"extra", mp::str("x")}}),
         "configure message: unknown key \"extra\""},
        {mp::map({{"x\x7f", mp::str("x")}}), "configure message: unknown key \"(not printable)\""},
        {mp::map({{"sample_period", mp::str("abc")}}), "sample_period: \"abc\" is not a number of seconds"},
    };
    for (const auto &[bytes, expect] : cases)
        EXPECT_EQ(error_of(decode_legacy_configure(bytes)), expect);
}

TEST(FrameTest, reads_a_frame_fed_byte_by_byte_and_nothing_after_it)
{
    std::string body = encode_request(ControlRequest{});
    std::string bytes = frame(body) + "NEXT";
    FrameReader reader;
    size_t used = 0;
    while (reader.wanted() > 0) {
        reader.feed(std::string_view(bytes).substr(used, 1));
        ++used;
    }
    EXPECT_EQ(reader.status(), FrameReader::Status::complete);
    EXPECT_EQ(used, body.size() + k_frame_header_bytes);
    EXPECT_EQ(reader.body(), body);
}

TEST(FrameTest, a_chunk_longer_than_the_frame_is_cut_at_its_end)
{
    std::string body = "\x80";
    FrameReader reader;
    EXPECT_EQ(reader.feed(frame(body) + "trailing"), FrameReader::Status::complete);
    EXPECT_EQ(reader.body(), body);
}

TEST(FrameTest, rejects_zero_and_oversized_lengths_at_once)
{
    FrameReader zero;
    EXPECT_EQ(zero.feed(std::string("\0\0\0\0", 4)), FrameReader::Status::bad_length);
    FrameReader big;
    EXPECT_EQ(big.feed(std::string("\0\1\0\1", 4)), FrameReader::Status::bad_length);
    EXPECT_EQ(big.declared(), 65537u);
    EXPECT_EQ(big.wanted(), 0u);
    FrameReader text;  // "hello" read as a length
    EXPECT_EQ(text.feed("hello world\n"), FrameReader::Status::bad_length);
    FrameReader max;
    EXPECT_EQ(max.feed(std::string("\0\1\0\0", 4)), FrameReader::Status::incomplete);
    EXPECT_EQ(max.wanted(), k_max_frame_bytes);
}

TEST(ControlPathTest, the_socket_name_follows_the_job_file_rule)
{
    EXPECT_EQ(control_socket_path("/run/colmet", "123.0"), "/run/colmet/123.0.ctl");
    // Ids that used to sanitize alike no longer share a socket.
    EXPECT_NE(control_socket_path("/run/colmet", "a:b"), control_socket_path("/run/colmet", "a_b"));
    auto hostile = control_socket_path("/run/colmet", "../../etc/passwd");
    EXPECT_EQ(hostile.parent_path(), "/run/colmet");
    EXPECT_EQ(hostile.filename().string().find('/'), std::string::npos);
    EXPECT_NE(hostile.filename().string()[0], '.');
}

TEST(CtlFormatTest, status_shows_delivery_only_from_a_sampler_that_reports_it)
{
    ControlState s{"42", 5, "counting", {"task_clock"}, 12, 0, "tcp://c:5556", "acknowledged", 9, 3, 2};
    const std::string text = colmet::ctl::format_state(s);
    EXPECT_NE(text.find("delivery       9 acknowledged, 3 unacknowledged (2 in the node spool)\n"), std::string::npos)
        << text;
    s.delivery = "unacknowledged";
    EXPECT_NE(colmet::ctl::format_state(s).find("delivery       unacknowledged\n"), std::string::npos);
    s.delivery.clear();  // a sampler older than acknowledged delivery says nothing of it
    EXPECT_EQ(colmet::ctl::format_state(s).find("delivery"), std::string::npos);
}
