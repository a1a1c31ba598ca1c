// Outbox entries as the sampler makes them, and draining an outbox the way
// the sampler's delivery does (tests/unit/node).
#pragma once

#include "node/delivery/Outbox.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace colmet::node::testing {

// An encoded version-2 message of job 42 from sender h/1/1 with the given
// seq, padded with `pad` bytes of metadata.
inline OutboxEntry make_entry(uint64_t seq, size_t pad = 0, int64_t time_ns = 1)
{
    wire::Message m;
    m.version = wire::k_acked_protocol_version;
    m.ack = 1;
    m.host = "h";
    m.job_id = "42";
    m.sender = "h/1/1";
    m.seq = seq;
    m.time_ns = time_ns;
    if (pad > 0)
        m.meta = {{"pad", std::string(pad, 'x')}};
    OutboxEntry e;
    e.seq = seq;
    e.time_ns = time_ns;
    EXPECT_TRUE(wire::encode(m, e.bytes, &e.base_at));
    return e;
}

using SeqBase = std::vector<std::pair<uint64_t, uint64_t>>;

// Send everything sendable; returns the seqs sent with the base each carried.
inline SeqBase send_all(Outbox &box)
{
    SeqBase out;
    while (OutboxEntry *e = box.next()) {
        wire::Message m;
        EXPECT_TRUE(wire::decode(e->bytes.data(), e->bytes.size(), m));
        out.emplace_back(m.seq, m.base);
        box.sent();
    }
    return out;
}

}  // namespace colmet::node::testing
