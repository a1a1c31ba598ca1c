// libFuzzer target for the wire decoder: any byte string must either decode
// into a message that passes validate() and re-encodes, or be rejected with
// an error (and, read as an acknowledgement frame, be either refused or
// exactly the frame encode_ack makes). Crashes, leaks, sanitizer reports or timeouts are bugs.
//
// Each input is decoded twice: into a fresh Message, and into one Message
// reused across inputs, as the collector does (the decoder then skips the
// descriptors whose bytes it decoded into the same slot before). Both must
// agree on every field, or the shortcut is wrong.
#include "wire/ack.hpp"
#include "wire/codec.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

std::string wire_bytes(const colmet::wire::BackendBlock &b) { return b.metrics_wire ? *b.metrics_wire : std::string(); }

bool same_values(const std::vector<double> &a, const std::vector<double> &b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

bool same(const colmet::wire::Message &a, const colmet::wire::Message &b)
{
    if (a.job_id != b.job_id || a.host != b.host || a.sender != b.sender || a.seq != b.seq || a.time_ns != b.time_ns ||
        a.kind != b.kind || a.meta != b.meta || a.backends.size() != b.backends.size())
        return false;
    for (size_t i = 0; i < a.backends.size(); ++i) {
        const auto &x = a.backends[i], &y = b.backends[i];
        if (x.name != y.name || x.scope != y.scope || x.metrics != y.metrics || x.status != y.status ||
            !same_values(x.values, y.values) || wire_bytes(x) != wire_bytes(y))
            return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static colmet::wire::Message reused;
    const char *bytes_in = reinterpret_cast<const char *>(data);
    // The same bytes as an acknowledgement frame (what a sampler reads), for
    // the sender named by the bytes before the first NUL: one that decodes
    // must be exactly what the collector would have sent.
    const std::string_view as_ack(bytes_in, size);
    const std::string_view sender = as_ack.substr(0, as_ack.find('\0'));
    if (auto seq = colmet::wire::decode_ack(as_ack, sender); seq && colmet::wire::encode_ack(sender, *seq) != as_ack)
        std::abort();
    colmet::wire::Message msg;
    auto r = colmet::wire::decode(bytes_in, size, msg);
    auto r2 = colmet::wire::decode(bytes_in, size, reused);
    if (static_cast<bool>(r) != static_cast<bool>(r2))
        std::abort();
    if (!r) {
        if (r.error().message() != r2.error().message())
            std::abort();
        return 0;
    }
    if (!same(msg, reused))
        std::abort();
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
