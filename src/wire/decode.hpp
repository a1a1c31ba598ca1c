// Strict decoding of wire::Message from msgpack bytes (decode.cpp).
#pragma once

#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstddef>

namespace colmet::wire {

// Decode bytes into out, reusing out's storage. Every violation of the schema
// is an Errc::parse error whose message names the field ("backends[1].values[3]:
// expected a number or nil"). Never throws, never reads past size.
Result<void> decode(const char *data, size_t size, Message &out);

}  // namespace colmet::wire
