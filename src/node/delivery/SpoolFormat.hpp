// The bytes of a node spool file (docs/protocol.md, "The node spool"): what
// a sampler could not get acknowledged, kept on the node's disk until a
// collector takes it. Pure functions over bytes, so that the reader can be
// fuzzed; the file itself is node/delivery/Spool.hpp.
//
//   file   = "colmet-spool 1\n" frame*
//   frame  = "CSPR" u32 size  u32 crc32(payload)  payload      (little-endian)
//   payload = 'H' header text: key=value lines (the job, its sender, where
//                                its collector is and the keys to reach it)
//           | 'M' u64 seq  i64 time_ns  u32 base_at  message bytes
//
// Frames are only ever appended, each by one write(): a crash or a full
// disk tears at most the last one. The reader keeps every frame whose
// checksum holds and skips the rest up to the next "CSPR", so a damaged
// frame in the middle loses that frame alone.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::node {

inline constexpr std::string_view k_spool_magic = "colmet-spool 1\n";
inline constexpr std::string_view k_spool_frame_mark = "CSPR";
inline constexpr size_t k_spool_frame_overhead = 12;                   // mark, size, crc
inline constexpr size_t k_spool_message_overhead = 21;                 // 'M', seq, time, base_at
inline constexpr size_t k_max_spool_payload = (size_t{1} << 20) + 64;  // a message is at most 1 MiB

// Where the messages of one job's sampler go: enough for any later process
// to send them as that sampler would have.
struct SpoolHeader {
    std::string job_id;
    std::string sender;  // the sampler's sender id (acknowledgements name it)
    std::string uri;     // the job's collector
    std::string ack_uri;
    std::string curve_server_key;  // files, empty without CURVE
    std::string curve_secret_key;
    bool operator==(const SpoolHeader &) const = default;
};

// One message in a spool file; its bytes are at [offset, offset + size).
struct SpooledRecord {
    uint64_t seq = 0;
    int64_t time_ns = 0;
    uint32_t base_at = 0;  // offset of the message's `base` field (wire::patch_base)
    uint64_t offset = 0;
    uint32_t size = 0;
};

struct SpoolContents {
    std::optional<SpoolHeader> header;   // none: not a spool file, or its header is damaged
    std::vector<SpooledRecord> records;  // seqs strictly increasing
    uint64_t damaged_bytes = 0;          // skipped: failed checksums, unknown frames, a torn end
    uint64_t damaged_frames = 0;         // damaged regions skipped, a torn end included
    uint64_t out_of_order = 0;           // sound frames whose seq did not increase (dropped)
};

std::string spool_file_start(const SpoolHeader &header);  // magic + the header frame
// One message frame; the message's bytes follow the returned prefix in the
// file (appended by the caller, so that the message is not copied).
std::string spool_message_prefix(uint64_t seq, int64_t time_ns, uint32_t base_at, std::string_view message);
// Every sound frame of a spool file's bytes. Never fails: damage is counted.
SpoolContents parse_spool(std::string_view bytes);
// A header's text values must be one line each.
Result<void> check_spool_header(const SpoolHeader &header);

}  // namespace colmet::node
