// Acknowledgements (protocol version 2, docs/protocol.md "Acknowledged
// delivery"): the collector publishes, on its ack endpoint, one frame per
// sender whose messages it has stored:
//
//   <sender bytes> 0x00 <version: one byte, 2> <seq: uint64 big-endian>
//
// meaning "every message of this sender up to seq is stored, or will never
// be (the sender gave it up)". A sampler subscribes to ack_topic(its sender):
// the NUL ends the topic, so one sender's id being the prefix of another's
// does not mix their acknowledgements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace colmet::wire {

struct Ack {
    std::string sender;
    uint64_t seq = 0;
};

std::string ack_topic(std::string_view sender);
std::string encode_ack(std::string_view sender, uint64_t seq);
// The seq of a frame for `sender`; nullopt for anything else (another
// sender's, another version, the wrong length).
std::optional<uint64_t> decode_ack(std::string_view frame, std::string_view sender);

}  // namespace colmet::wire
