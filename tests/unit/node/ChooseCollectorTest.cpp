// choose_collector(): the job's collector and its key file out of the lists
// of --zeromq-uri and --curve-server-key.
#include "node/ChooseCollector.hpp"
#include "common/collectors.hpp"

#include <gtest/gtest.h>

namespace colmet::node {
namespace {

TEST(ChooseCollectorTest, one_address_is_kept_as_it_is)
{
    ZmqOptions o;
    o.uri = "tcp://collector:5556";
    o.curve_server_key = "/etc/colmet/collector.pub";
    auto c = choose_collector(o, "42");
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->uri, "tcp://collector:5556");
    EXPECT_EQ(c->curve_server_key, "/etc/colmet/collector.pub");
    EXPECT_EQ(c->hwm, o.hwm);
}

TEST(ChooseCollectorTest, picks_the_jobs_collector_and_its_key)
{
    ZmqOptions o;
    o.uri = "tcp://a:5556, tcp://b:5556";
    o.curve_server_key = "/k/a.pub, /k/b.pub";
    int to_a = 0;
    for (int job = 0; job < 200; ++job) {
        const std::string id = std::to_string(job);
        auto c = choose_collector(o, id);
        ASSERT_TRUE(c.ok()) << c.error().message();
        const std::vector<std::string> all{"tcp://a:5556", "tcp://b:5556"};
        EXPECT_EQ(c->uri, all[collector_index(all, id)]);
        EXPECT_EQ(c->curve_server_key, c->uri == "tcp://a:5556" ? "/k/a.pub" : "/k/b.pub");
        to_a += c->uri == "tcp://a:5556";
    }
    EXPECT_GT(to_a, 50);
    EXPECT_LT(to_a, 150);
}

TEST(ChooseCollectorTest, one_key_file_serves_every_collector)
{
    ZmqOptions o;
    o.uri = "tcp://a:5556,tcp://b:5556,tcp://c:5556";
    o.curve_server_key = "/k/cluster.pub";
    for (std::string id : {"1", "2", "3", "4"}) {
        auto c = choose_collector(o, id);
        ASSERT_TRUE(c.ok());
        EXPECT_EQ(c->curve_server_key, "/k/cluster.pub");
    }
}

TEST(ChooseCollectorTest, refuses_bad_lists)
{
    ZmqOptions o;
    o.uri = "tcp://a:5556,tcp://b:5556";
    o.curve_server_key = "/k/a.pub,/k/b.pub,/k/c.pub";
    auto c = choose_collector(o, "1");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("3 key files for 2 collectors"), std::string::npos) << c.error().message();
    o.curve_server_key = "/k/a.pub,";
    c = choose_collector(o, "1");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("empty file name"), std::string::npos) << c.error().message();
    o.curve_server_key.clear();
    o.uri = "tcp://a:5556 tcp://b:5556";
    c = choose_collector(o, "1");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("--zeromq-uri"), std::string::npos) << c.error().message();
}

TEST(ChooseCollectorTest, the_ack_endpoint_is_the_chosen_collectors)
{
    ZmqOptions o;
    o.uri = "tcp://a:5556,tcp://b:6000";
    for (std::string id : {"1", "2", "3", "4", "5", "6"}) {
        auto c = choose_collector(o, id);
        ASSERT_TRUE(c.ok()) << c.error().message();
        EXPECT_EQ(c->ack_uri, c->uri == "tcp://a:5556" ? "tcp://a:5557" : "tcp://b:6001");  // derived
        o.ack_uri = "tcp://a:7000, tcp://b:7000";
        auto listed = choose_collector(o, id);
        ASSERT_TRUE(listed.ok()) << listed.error().message();
        EXPECT_EQ(listed->ack_uri, listed->uri == "tcp://a:5556" ? "tcp://a:7000" : "tcp://b:7000");
        o.ack_uri = "none";
        EXPECT_EQ(choose_collector(o, id)->ack_uri, "");
        o.ack_uri.clear();
    }
    o.ack_uri = "tcp://a:7000";
    auto wrong = choose_collector(o, "1");
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message().find("--ack-uri lists 1 endpoints for 2 collectors"), std::string::npos)
        << wrong.error().message();
    o.uri = "tcp://a:65535";
    o.ack_uri.clear();
    auto underivable = choose_collector(o, "1");
    ASSERT_FALSE(underivable.ok());
    EXPECT_NE(underivable.error().message().find("--ack-uri"), std::string::npos) << underivable.error().message();
}

}  // namespace
}  // namespace colmet::node
