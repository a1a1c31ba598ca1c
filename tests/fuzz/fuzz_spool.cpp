// libFuzzer target for the node spool's reader (node/delivery/SpoolFormat):
// any bytes must parse without a crash into records that lie inside the
// input, in strictly increasing seq order, each with its `base` field
// inside its message; a header found must come back the same from the
// bytes the writer makes of it; and a sound record appended to a file that
// ends cleanly is found.
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
    // A sound record appended to a file that ends cleanly is read back. (After
    // a torn end it may not be: a crafted torn frame whose checksum happens to
    // hold over the next record's first bytes swallows them. The writer never
    // appends after a torn record: it cuts it off first.)
    if (c.damaged_bytes > 0 || c.out_of_order > 0 || (!c.records.empty() && c.records.back().seq == UINT64_MAX))
        return 0;
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
