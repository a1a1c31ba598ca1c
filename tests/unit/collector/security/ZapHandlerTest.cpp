#include "collector/security/ZapHandler.hpp"
#include "collector/security/BindPolicy.hpp"
#include "collector/security/ConnectionGuard.hpp"

#include <gtest/gtest.h>

#include <zmq.h>

using namespace colmet;
using namespace colmet::collector;

namespace {

std::string raw_of(const std::string &z85)
{
    std::string raw(32, '\0');
    zmq_z85_decode(reinterpret_cast<uint8_t *>(raw.data()), z85.c_str());
    return raw;
}

std::vector<std::string> request(const std::string &mechanism, const std::string &credentials)
{
    return {"1.0", "id7", "colmet", "10.0.0.9", "", mechanism, credentials};
}

}  // namespace

TEST(ZapHandler, lets_in_registered_keys_with_the_key_as_user_id)
{
    auto known = auth::generate_key_pair();
    auto stranger = auth::generate_key_pair();
    ASSERT_TRUE(known && stranger);
    auto keys = std::make_shared<auth::NodeKeys>();
    keys->add({"node1", known->public_key});
    ZapHandler zap(keys);

    auto yes = zap.answer(request("CURVE", raw_of(known->public_key)));
    EXPECT_EQ(yes, (std::vector<std::string>{"1.0", "id7", "200", "OK", known->public_key, ""}));

    auto no = zap.answer(request("CURVE", raw_of(stranger->public_key)));
    ASSERT_EQ(no.size(), 6u);
    EXPECT_EQ(no[1], "id7");
    EXPECT_EQ(no[2], "400");
    EXPECT_EQ(no[4], "");  // no identity for a refused peer
    EXPECT_EQ(zap.stats().accepted, 1u);
    EXPECT_EQ(zap.stats().refused, 1u);
}

TEST(ZapHandler, refuses_other_mechanisms_and_malformed_requests)
{
    auto keys = std::make_shared<auth::NodeKeys>();
    ZapHandler zap(keys);
    EXPECT_EQ(zap.answer(request("NULL", ""))[2], "400");
    EXPECT_EQ(zap.answer(request("PLAIN", "user"))[2], "400");
    EXPECT_EQ(zap.answer(request("CURVE", "short"))[2], "500");
    EXPECT_EQ(zap.answer({"1.0"})[2], "500");
    EXPECT_EQ(zap.answer({})[2], "500");
    EXPECT_EQ(zap.answer({"2.0", "id", "d", "a", "i", "CURVE", std::string(32, 'x')})[2], "500");
    auto extra = request("CURVE", std::string(32, 'x'));
    extra.push_back("more");
    EXPECT_EQ(zap.answer(extra)[2], "500");
    EXPECT_EQ(zap.stats().refused, 7u);
    EXPECT_EQ(zap.stats().accepted, 0u);
}

TEST(ZapHandler, new_keys_take_effect_for_the_next_handshake)
{
    auto a = auth::generate_key_pair();
    ASSERT_TRUE(a);
    ZapHandler zap(std::make_shared<auth::NodeKeys>());
    EXPECT_EQ(zap.answer(request("CURVE", raw_of(a->public_key)))[2], "400");
    auto keys = std::make_shared<auth::NodeKeys>();
    keys->add({"node1", a->public_key});
    zap.set_keys(keys);
    EXPECT_EQ(zap.answer(request("CURVE", raw_of(a->public_key)))[2], "200");
}

TEST(BindPolicy, loopback_endpoints)
{
    for (auto uri : {"tcp://127.0.0.1:5556", "tcp://127.1.2.3:1", "tcp://localhost:5556", "tcp://[::1]:5556",
                     "tcp://lo:5556", "ipc:///run/colmet/c.sock", "inproc://x"})
        EXPECT_TRUE(is_loopback_endpoint(uri)) << uri;
    for (auto uri : {"tcp://0.0.0.0:5556", "tcp://*:5556", "tcp://10.0.0.1:5556", "tcp://eth0:5556",
                     "tcp://127.0.0.1.evil.org:5556", "tcp://127.0.0.1;10.0.0.1:5556", "tcp://[::]:5556",
                     "tcp://[::1:5556", "udp://127.0.0.1:5556", "tcp://127.0.0:5556"})
        EXPECT_FALSE(is_loopback_endpoint(uri)) << uri;
}

TEST(BindPolicy, an_open_port_needs_keys_or_an_explicit_yes)
{
    EXPECT_TRUE(check_bind("tcp://127.0.0.1:5556", false, false));
    EXPECT_TRUE(check_bind("tcp://0.0.0.0:5556", true, false));
    EXPECT_TRUE(check_bind("tcp://0.0.0.0:5556", false, true));
    auto refused = check_bind("tcp://0.0.0.0:5556", false, false);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message().find("allow-unauthenticated = yes"), std::string::npos);
}

TEST(BindPolicy, an_ipc_address_in_a_services_private_tmp_is_warned_about)
{
    const auto warning = private_tmp_warning("ipc:///tmp/colmet.sock", "0123abcd");
    EXPECT_NE(warning.find("private /tmp"), std::string::npos) << warning;
    EXPECT_NE(warning.find("ipc:///run/colmet-collector/collector.sock"), std::string::npos) << warning;
    EXPECT_FALSE(private_tmp_warning("ipc:///var/tmp/c.sock", "x").empty());
    EXPECT_TRUE(private_tmp_warning("ipc:///tmp/colmet.sock", nullptr).empty());  // not a systemd service
    EXPECT_TRUE(private_tmp_warning("ipc:///tmp/colmet.sock", "").empty());
    EXPECT_TRUE(private_tmp_warning("ipc:///run/colmet-collector/c.sock", "x").empty());
    EXPECT_TRUE(private_tmp_warning("tcp://127.0.0.1:5556", "x").empty());
    EXPECT_TRUE(private_tmp_warning("ipc:///tmpfoo/c.sock", "x").empty());
}

TEST(ConnectionGuard, beyond_the_limit_the_oldest_connection_without_a_message_makes_room)
{
    ConnectionGuard guard({.max_connections = 2, .idle_timeout_ns = 100});
    EXPECT_EQ(guard.accepted(10, 0), -1);
    EXPECT_EQ(guard.accepted(11, 1), -1);
    guard.message_from(11, 2);             // 11 is a sender's
    EXPECT_EQ(guard.accepted(12, 3), 10);  // 10 never sent anything: it goes
    EXPECT_EQ(guard.open(), 2u);
    guard.message_from(12, 4);
    EXPECT_EQ(guard.accepted(13, 5), 13);  // every connection is a sender's: the new one waits
    EXPECT_EQ(guard.open(), 2u);
    guard.message_from(-1, 6);  // a message whose descriptor is unknown changes nothing
    EXPECT_EQ(guard.stats().accepted, 4u);
    EXPECT_EQ(guard.stats().over_limit, 2u);
}

TEST(ConnectionGuard, subscribers_past_their_handshake_are_kept_and_newer_ones_make_room_first)
{
    ConnectionGuard guard({.max_connections = 2, .idle_timeout_ns = 100});
    EXPECT_EQ(guard.accepted(10, 0), -1);
    guard.protect_older_than(5);           // 10 outlived its handshake
    EXPECT_EQ(guard.accepted(11, 6), -1);  // 11 is still in its handshake
    EXPECT_EQ(guard.accepted(12, 7), 11);  // so 11 makes room, never 10
    guard.protect_older_than(7);           // 12 at 7 is not older than 7
    EXPECT_EQ(guard.accepted(13, 8), 12);
    guard.protect_older_than(9);
    EXPECT_EQ(guard.accepted(14, 10), 14);  // both past their handshake: the new one is cut
    EXPECT_EQ(guard.open(), 2u);
    EXPECT_EQ(guard.stats().over_limit, 3u);
}

TEST(ConnectionGuard, cuts_connections_idle_for_the_timeout)
{
    ConnectionGuard guard({.max_connections = 10, .idle_timeout_ns = 100});
    EXPECT_EQ(guard.accepted(10, 0), -1);
    EXPECT_EQ(guard.accepted(11, 0), -1);
    guard.message_from(10, 60);
    EXPECT_EQ(guard.idle(99), std::vector<int>{});
    EXPECT_EQ(guard.idle(100), std::vector<int>{11});
    EXPECT_EQ(guard.open(), 1u);
    guard.closed(10);
    guard.closed(10);  // a second close event of the same descriptor is harmless
    EXPECT_EQ(guard.open(), 0u);
    EXPECT_EQ(guard.stats().idle, 1u);
}
