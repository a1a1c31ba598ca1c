// A transport whose collector the test scripts (tests/unit/node): whether
// sends succeed, the events the next events() reports, and what was sent.
#pragma once

#include "node/Transport.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace colmet::node::testing {

struct Sent {
    uint64_t seq;
    uint64_t base;
    wire::MessageKind kind;
};

// What the test scripts: whether a collector is connected (sends succeed),
// and the events the next events() reports.
struct Script {
    bool connected = false;
    bool may_answer = true;
    TransportEvents next;
    bool auto_ack = false;  // events() acknowledges everything sent so far
    std::vector<Sent> sent;
    std::string listened;  // the sender whose acknowledgements are awaited
};

class ScriptedTransport : public Transport {
public:
    explicit ScriptedTransport(Script &script) : m_script(script) {}
    bool send(std::string_view bytes) noexcept override
    {
        if (!m_script.connected)
            return false;
        wire::Message m;
        EXPECT_TRUE(wire::decode(bytes.data(), bytes.size(), m));
        EXPECT_TRUE(wire::wants_ack(m));
        m_script.sent.push_back({m.seq, m.base, m.kind});
        return true;
    }
    bool acknowledged() const noexcept override { return true; }
    void listen_for_acks(std::string_view sender) override { m_script.listened = sender; }
    TransportEvents events() noexcept override
    {
        if (m_script.auto_ack && !m_script.sent.empty())
            m_script.next.acked = m_script.sent.back().seq;
        return std::exchange(m_script.next, {});
    }
    bool may_answer() const noexcept override { return m_script.may_answer; }

private:
    Script &m_script;
};

}  // namespace colmet::node::testing
