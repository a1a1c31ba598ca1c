// The input format of fuzz_sink, shared with make_sink_seeds: a sequence of
// records, each a 2-byte big-endian header and a frame. The header's low 14
// bits are the frame's length (cut to what is left of the input), its top 2
// bits what the collector does after handling the frame (an empty frame is
// skipped: a record may be a control alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace colmet::fuzz {

enum class After : uint8_t {
    nothing = 0,
    tick = 1,       // the clock moves 1 s, then tick()
    flush_all = 2,  // flush_all() (SIGHUP)
    idle = 3,       // the clock moves 61 s, then tick(): idle files close
};

inline constexpr size_t k_max_frame = (1u << 14) - 1;

inline void append_record(std::string &out, std::string_view frame, After after)
{
    const size_t n = frame.size() < k_max_frame ? frame.size() : k_max_frame;
    const unsigned header = (static_cast<unsigned>(after) << 14) | static_cast<unsigned>(n);
    out.push_back(static_cast<char>(header >> 8));
    out.push_back(static_cast<char>(header & 0xff));
    out.append(frame.substr(0, n));
}

// Calls on_record(frame, after) for each record of data.
template <typename OnRecord>
void for_each_record(const uint8_t *data, size_t size, OnRecord &&on_record)
{
    size_t at = 0;
    while (size - at >= 2) {
        const unsigned header = (static_cast<unsigned>(data[at]) << 8) | data[at + 1];
        at += 2;
        size_t n = header & k_max_frame;
        if (n > size - at)
            n = size - at;
        on_record(std::string_view(reinterpret_cast<const char *>(data + at), n), static_cast<After>(header >> 14));
        at += n;
    }
}

}  // namespace colmet::fuzz
