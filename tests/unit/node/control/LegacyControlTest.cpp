// The legacy configure endpoint: a real ZeroMQ PUSH sends the original
// configure_colmet.py message over tcp to LegacyControl, polled through its
// ZMQ_FD as the sampler does; malformed messages are rejected, not fatal.
#include "node/control/LegacyControl.hpp"

#include "MsgpackBuilder.hpp"

#include <gtest/gtest.h>

#include <poll.h>

#include <chrono>

using namespace colmet;
using namespace colmet::node::control;
namespace mp = colmet::test::mp;

namespace {

// Poll the endpoint until `want` requests were handled or 3 s passed.
std::vector<ControlRequest> pump(LegacyControl &legacy, size_t want)
{
    std::vector<ControlRequest> got;
    auto handler = [&got](const ControlRequest &r) {
        got.push_back(r);
        ControlAnswer a;
        a.accepted = r.period_s.value_or(1) != 42;
        return a;
    };
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (got.size() < want && std::chrono::steady_clock::now() < end) {
        pollfd p{legacy.fd(), POLLIN, 0};
        ::poll(&p, 1, 20);
        while (legacy.handle(handler)) {
        }
    }
    return got;
}

}  // namespace

TEST(LegacyControlTest, only_tcp_endpoints)
{
    EXPECT_FALSE(LegacyControl::bind("ipc:///tmp/x"));
    EXPECT_FALSE(LegacyControl::bind("inproc://x"));
}

TEST(LegacyControlTest, applies_the_original_configure_message_and_survives_garbage)
{
    std::unique_ptr<LegacyControl> legacy;
    int port = 0;
    for (port = 47600; port < 47700 && !legacy; ++port) {
        auto b = LegacyControl::bind("tcp://127.0.0.1:" + std::to_string(port));
        if (b)
            legacy = std::move(*b);
    }
    ASSERT_TRUE(legacy) << "no free port";
    --port;

    zmq::context_t ctx;
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 0);
    push.connect("tcp://127.0.0.1:" + std::to_string(port));
    auto send = [&push](const std::string &bytes) { push.send(zmq::buffer(bytes), zmq::send_flags::none); };

    send("not msgpack at all");
    send(mp::map({{"sample_period", mp::str("0")}}));   // a division by zero in the original
    send(mp::map({{"sample_period", mp::dbl(2)}}));     // not a string
    send(mp::map({{"sample_period", mp::str("42")}}));  // decoded, refused by the handler
    send(mp::map({{"sample_period", mp::str("1.5")}, {"perfhw_metrics", mp::str("cache_ll,emulation_faults")}}));

    auto got = pump(*legacy, 2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(*got[0].period_s, 42);
    EXPECT_EQ(*got[1].period_s, 1.5);
    EXPECT_EQ(*got[1].perfhw_events, (std::vector<std::string>{"cache_ll", "emulation_faults"}));
    EXPECT_EQ(legacy->rejected(), 4u);  // three malformed, one refused
}
