// libFuzzer target for the wire decoder: any byte string must either decode
// into a message that passes validate() and re-encodes, or be rejected with
// an error. Crashes, leaks, sanitizer reports or timeouts are bugs.
#include "wire/codec.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    colmet::wire::Message msg;
    auto r = colmet::wire::decode(reinterpret_cast<const char *>(data), size, msg);
    if (!r)
        return 0;
    // What the decoder accepts, the encoder must accept and reproduce.
    std::string bytes;
    if (!colmet::wire::encode(msg, bytes))
        std::abort();
    colmet::wire::Message again;
    if (!colmet::wire::decode(bytes.data(), bytes.size(), again))
        std::abort();
    if (again.job_id != msg.job_id || again.backends.size() != msg.backends.size() || again.seq != msg.seq)
        std::abort();
    return 0;
}
