// msgpack encoding and strict decoding (decode.hpp) of wire::Message.
#pragma once

#include "common/result.hpp"
#include "wire/decode.hpp"
#include "wire/message.hpp"

#include <cstddef>
#include <string>

namespace colmet::wire {

// Append the msgpack bytes of msg to out (out is cleared first).
// Fails only when the message breaks one of the protocol bounds. A message
// that asks for acknowledgements (wants_ack) carries `base` as a fixed-width
// uint64 whose offset in out is stored in *base_at (when given), so that a
// sender can bring it up to date before resending the bytes (patch_base).
Result<void> encode(const Message &msg, std::string &out, size_t *base_at = nullptr);
void patch_base(std::string &bytes, size_t base_at, uint64_t base);

// Check a message against the protocol bounds and rules (what the decoder
// would reject). Used by the encoder and by tests.
Result<void> validate(const Message &msg);

}  // namespace colmet::wire
