// The rule that picks a job's collector out of several (common/collectors).
#include "common/collectors.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace colmet {
namespace {

std::vector<std::string> list(std::string_view text)
{
    auto r = parse_collector_list(text);
    EXPECT_TRUE(r.ok()) << text << ": " << (r ? "" : r.error().message());
    return r ? *r : std::vector<std::string>{};
}

TEST(CollectorsTest, parses_one_or_several_addresses)
{
    EXPECT_EQ(list("tcp://127.0.0.1:5556"), std::vector<std::string>{"tcp://127.0.0.1:5556"});
    EXPECT_EQ(list(" tcp://a:1 ,\ttcp://b:2,ipc:///run/c.sock "),
              (std::vector<std::string>{"tcp://a:1", "tcp://b:2", "ipc:///run/c.sock"}));
    EXPECT_EQ(list("tcp://a:1\ntcp://b:2"), (std::vector<std::string>{"tcp://a:1", "tcp://b:2"}));
}

TEST(CollectorsTest, refuses_malformed_lists)
{
    struct Case {
        std::string text;
        std::string expect;
    };
    std::string many;
    for (int i = 0; i <= static_cast<int>(k_max_collectors); ++i)
        many += (i ? "," : "") + std::string("tcp://c") + std::to_string(i) + ":1";
    for (const Case &c : {Case{"", "empty address"}, Case{"  ", "empty address"}, Case{"tcp://a:1,", "empty address"},
                          Case{",tcp://a:1", "empty address"}, Case{"tcp://a:1,,tcp://b:1", "empty address"},
                          Case{"localhost:5556", "not a ZeroMQ endpoint"}, Case{"tcp://", "not a ZeroMQ endpoint"},
                          Case{"://a:1", "not a ZeroMQ endpoint"}, Case{"TCP://a:1", "not a ZeroMQ endpoint"},
                          Case{"tcp://a b:1", "not a ZeroMQ endpoint"}, Case{std::string("tcp://a\0:1", 10), "not a"},
                          Case{"tcp://a:1\x7f", "not a ZeroMQ endpoint"}, Case{"tcp://a:1,tcp://a:1", "listed twice"},
                          Case{"tcp://a:1, tcp://a:1 ", "listed twice"}, Case{many, "more than 64"}}) {
        auto r = parse_collector_list(c.text);
        ASSERT_FALSE(r.ok()) << c.text;
        EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << c.text << ": " << r.error().message();
    }
    // The limit itself is allowed.
    many.resize(many.rfind(','));
    EXPECT_EQ(list(many).size(), k_max_collectors);
}

TEST(CollectorsTest, one_collector_takes_every_job)
{
    const auto one = list("tcp://only:1");
    for (std::string id : {"1", "42", "a/b", "", "run-20261204T101010-77"})
        EXPECT_EQ(collector_index(one, id), 0u);
}

TEST(CollectorsTest, the_choice_depends_on_the_job_and_the_set_not_the_order)
{
    const auto abc = list("tcp://a:5556,tcp://b:5556,tcp://c:5556");
    const auto cab = list("tcp://c:5556,tcp://a:5556,tcp://b:5556");
    for (int job = 0; job < 1000; ++job) {
        const std::string id = std::to_string(job);
        EXPECT_EQ(abc[collector_index(abc, id)], cab[collector_index(cab, id)]) << id;
        EXPECT_EQ(collector_index(abc, id), collector_index(abc, id));
    }
}

TEST(CollectorsTest, jobs_spread_over_the_collectors)
{
    const auto four = list("tcp://c1:5556,tcp://c2:5556,tcp://c3:5556,tcp://c4:5556");
    std::map<size_t, int> count;
    for (int job = 1; job <= 4000; ++job)  // scheduler ids: consecutive numbers
        ++count[collector_index(four, std::to_string(job))];
    ASSERT_EQ(count.size(), 4u);
    for (auto [index, n] : count)  // 1000 expected; 4 sigma is about 110
        EXPECT_NEAR(n, 1000, 150) << four[index];
}

TEST(CollectorsTest, adding_a_collector_moves_only_the_jobs_it_takes)
{
    const auto three = list("tcp://a:1,tcp://b:1,tcp://c:1");
    const auto four = list("tcp://a:1,tcp://b:1,tcp://c:1,tcp://d:1");
    int moved = 0;
    for (int job = 0; job < 2000; ++job) {
        const std::string id = std::to_string(job);
        const std::string &before = three[collector_index(three, id)];
        const std::string &after = four[collector_index(four, id)];
        if (before != after) {
            EXPECT_EQ(after, "tcp://d:1") << id;  // never from one old collector to another
            ++moved;
        }
    }
    EXPECT_NEAR(moved, 500, 100);
}

TEST(CollectorsTest, the_ack_endpoint_follows_from_the_data_endpoint)
{
    EXPECT_EQ(*ack_endpoint_of("tcp://coll-a:5556"), "tcp://coll-a:5557");
    EXPECT_EQ(*ack_endpoint_of("tcp://[::1]:6000"), "tcp://[::1]:6001");
    EXPECT_EQ(*ack_endpoint_of("tcp://0.0.0.0:65534"), "tcp://0.0.0.0:65535");
    EXPECT_EQ(*ack_endpoint_of("ipc:///run/colmet/c.sock"), "ipc:///run/colmet/c.sock.ack");
    EXPECT_EQ(*ack_endpoint_of("inproc://c"), "inproc://c.ack");
    for (const char *bad : {"tcp://h:65535", "tcp://h:*", "tcp://h:http", "tcp://h", "tcp://h:", "tcp://h:123456",
                            "pgm://eth0;239.1.1.1:5555", "nonsense", "tcp://h:0"}) {
        auto r = ack_endpoint_of(bad);
        ASSERT_FALSE(r) << bad;
        if (std::string_view(bad).find("://") != std::string_view::npos) {
            EXPECT_NE(r.error().message().find("set it explicitly"), std::string::npos) << r.error().message();
        }
    }
}

}  // namespace
}  // namespace colmet
