// libFuzzer target for the CURVE key files' parsers (auth/CurveKeys): the
// key-pair file a node or the collector reads at start, and the public-key
// files (the collector's key on every node, the nodes' keys in the
// collector's directory). Any text must be refused with an error or give
// keys that are valid Z85 and come back the same from the text the
// project's own writers make of them.
#include "auth/CurveKeys.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace colmet::auth;

namespace {

// Forty characters of the Z85 alphabet (a NUL would cut the key short where
// ZeroMQ reads it as a C string).
bool z85_text(std::string_view key)
{
    return key.size() == k_z85_key_length && key.find_first_not_of(k_z85_alphabet) == std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    if (auto pair = parse_key_pair(text, "fuzz")) {
        if (!z85_text(pair->public_key) || !z85_text(pair->secret_key))
            std::abort();
        auto again = parse_key_pair(format_key_pair_file(*pair, "fuzz"), "again");
        if (!again || again->public_key != pair->public_key || again->secret_key != pair->secret_key)
            std::abort();
    }
    if (auto keys = parse_public_keys(text, "fuzz")) {
        for (const NamedKey &k : *keys) {
            if (!z85_text(k.public_key) || k.name.empty())
                std::abort();
            auto again = parse_public_keys(format_public_key_file(k.name, k.public_key), "again");
            if (!again || again->size() != 1 || (*again)[0].name != k.name || (*again)[0].public_key != k.public_key)
                std::abort();
        }
    }
    return 0;
}
