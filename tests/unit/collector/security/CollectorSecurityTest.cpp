// The collector binds each authenticated connection's key to the hosts it
// is registered for.
#include "collector/Collector.hpp"
#include "common/clock.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

using namespace colmet;
using namespace colmet::collector;

namespace {

class CountingSink : public Sink {
public:
    explicit CountingSink(std::vector<std::string> &hosts) : m_hosts(hosts) {}
    void consume(const wire::Message &msg, const Delivery &) noexcept override { m_hosts.push_back(msg.host); }
    void tick(int64_t) noexcept override {}
    void flush_all(int64_t) noexcept override {}
    void close_all() noexcept override {}

private:
    std::vector<std::string> &m_hosts;
};

std::string message(const std::string &host, uint64_t seq)
{
    wire::Message m;
    m.host = host;
    m.job_id = "77";
    m.sender = host + "-1";
    m.seq = seq;
    m.time_ns = realtime_ns();
    std::string bytes;
    EXPECT_TRUE(wire::encode(m, bytes));
    return bytes;
}

}  // namespace

TEST(CollectorSecurity, a_message_is_stored_only_under_its_hosts_key)
{
    auto k1 = auth::generate_key_pair();
    auto k2 = auth::generate_key_pair();
    ASSERT_TRUE(k1 && k2);
    std::vector<std::string> stored;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<CountingSink>(stored));
    Collector collector(std::move(sinks));
    auto keys = std::make_shared<auth::NodeKeys>();
    keys->add({"node042", k1->public_key});
    keys->add({"node043", k2->public_key});
    collector.set_node_keys(keys);

    auto send = [&](const std::string &host, uint64_t seq, const std::string &key) {
        auto bytes = message(host, seq);
        collector.handle_frame(bytes.data(), bytes.size(), false, monotonic_ns(), key);
    };
    send("node042", 0, k1->public_key);   // its own key
    send("node043", 0, k1->public_key);   // another node's key: forged
    send("evilhost", 0, k1->public_key);  // a host nobody registered
    send("node042", 1, "");               // no key at all
    send("node043", 1, k2->public_key);
    EXPECT_EQ(stored, (std::vector<std::string>{"node042", "node043"}));
    EXPECT_EQ(collector.stats().unauthorized, 3u);
    EXPECT_EQ(collector.stats().rejected, 3u);
    EXPECT_EQ(collector.stats().accepted, 2u);
}

TEST(CollectorSecurity, without_keys_every_valid_message_is_stored)
{
    std::vector<std::string> stored;
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<CountingSink>(stored));
    Collector collector(std::move(sinks));
    auto bytes = message("anyhost", 0);
    collector.handle_frame(bytes.data(), bytes.size(), false, monotonic_ns());
    EXPECT_EQ(stored.size(), 1u);
    EXPECT_EQ(collector.stats().unauthorized, 0u);
}
