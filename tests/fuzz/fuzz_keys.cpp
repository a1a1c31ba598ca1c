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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    if (auto pair = parse_key_pair(text, "fuzz")) {
        if (!is_z85_key(pair->public_key) || !is_z85_key(pair->secret_key))
            std::abort();
        auto again = parse_key_pair(format_key_pair_file(*pair, "fuzz"), "again");
        if (!again || again->public_key != pair->public_key || again->secret_key != pair->secret_key)
            std::abort();
    }
    if (auto keys = parse_public_keys(text, "fuzz")) {
        for (const NamedKey &k : *keys) {
            if (!is_z85_key(k.public_key) || k.name.empty())
                std::abort();
            auto again = parse_public_keys(format_public_key_file(k.name, k.public_key), "again");
            if (!again || again->size() != 1 || (*again)[0].name != k.name || (*again)[0].public_key != k.public_key)
                std::abort();
        }
    }
    return 0;
}
