// libFuzzer target for the node spool's reader (node/delivery/SpoolFormat):
// any bytes must parse without a crash into records that lie inside the
// input, in strictly increasing seq order, each with its `base` field
// inside its message; a header found must come back the same from the
// bytes the writer makes of it; and a sound record appended after the
// input's bytes is found, whatever came before (a torn end loses only
// itself).
#include "node/delivery/SpoolFormat.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace colmet::node;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    const SpoolContents c = parse_spool(bytes);
    uint64_t previous = 0;
    for (size_t i = 0; i < c.records.size(); ++i) {
        const SpooledRecord &r = c.records[i];
        if (r.offset + r.size > size || r.offset < k_spool_message_overhead ||
            bytes[r.offset - k_spool_message_overhead] != 'M')
            std::abort();
        if (static_cast<uint64_t>(r.base_at) + 8 > r.size)
            std::abort();
        if (i > 0 && r.seq <= previous)
            std::abort();
        previous = r.seq;
    }
    if (c.damaged_bytes > size)
        std::abort();
    if (!c.header)
        return 0;
    if (check_spool_header(*c.header)) {
        const SpoolContents again = parse_spool(spool_file_start(*c.header));
        if (!again.header || !(*again.header == *c.header) || !again.records.empty())
            std::abort();
    }
    // A sound record after whatever the input holds is read back.
    const uint64_t seq = c.records.empty() ? 1 : c.records.back().seq + 1;
    const std::string message(16, 'm');
    std::string more(bytes);
    more += spool_message_prefix(seq, 1, 0, message);
    more += message;
    const SpoolContents extended = parse_spool(more);
    if (extended.records.empty() || extended.records.back().seq != seq ||
        extended.records.back().size != message.size())
        std::abort();
    return 0;
}
