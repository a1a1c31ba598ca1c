// Turning untrusted identifiers (job ids, host names) into safe file and
// HDF5 object names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace colmet {

// Maximum length of a job id or host name accepted anywhere in colmet.
inline constexpr size_t k_max_id_length = 128;

// Map an identifier to a name that is safe as a single path component and as
// an HDF5 link name: [A-Za-z0-9._-] kept, every other byte becomes '_', a
// leading '.' becomes '_' (so "." and ".." and hidden files cannot appear),
// and the result is cut to k_max_id_length. Never returns an empty string.
std::string sanitize_name(std::string_view id);

// The files colmet keeps per job id, each named by job_file() alone.
enum class JobFile {
    sampler_record,  // <run dir>/<stem>.pid, colmet-job's record of the job's sampler
    control_socket,  // <control dir>/<stem>.ctl, the sampler's control socket
    data,            // <HDF5 dir>/<stem>.h5, the collector's file of the job
    summary,         // <HDF5 dir>/<stem>.json, the job's summary as JSON, written with the file's /summary
};

// The one rule that turns a job id into a file name stem, for every
// component: the id percent-encoded, so that distinct ids never share a name
// ("a/b" is a%2Fb, "a_b" stays a_b). Bytes of [A-Za-z0-9_.-] are kept,
// every other byte is %XX (upper-case hex), and so is a leading '.' (no
// "." or ".." or hidden file). The stem is one path component. An id whose
// encoding would pass k_max_stem_length bytes (a 128-byte id with more than
// 60 bytes to encode) gets sanitize_name(id) + "~" + 16 hex digits of a
// 64-bit FNV-1a hash of the id instead: never equal to an encoded stem
// (those have no '~').
inline constexpr size_t k_max_stem_length = 248;  // + ".pid" stays under NAME_MAX (255)
std::string job_file_stem(std::string_view id, size_t max_length = k_max_stem_length);

// <spool dir>/<stem>.<16 hex digits of fnv1a64(sender)>.spool: the node
// spool file of one job's sampler (node/delivery/Spool.hpp). The stem is
// job_file_stem's rule cut shorter (hashed beyond k_max_spool_stem_length),
// so that the name stays one path component under NAME_MAX.
inline constexpr size_t k_max_spool_stem_length = 224;
std::filesystem::path spool_file(const std::filesystem::path &dir, std::string_view id, std::string_view sender);
inline constexpr std::string_view k_spool_suffix = ".spool";

// The 64-bit FNV-1a hash of the bytes (names that must stay apart).
uint64_t fnv1a64(std::string_view bytes);

// dir / (job_file_stem(id) + the kind's suffix).
std::filesystem::path job_file(const std::filesystem::path &dir, std::string_view id, JobFile kind);

// True when the id is acceptable at all: 1..k_max_id_length bytes, printable
// ASCII, no '/' and no NUL. Ids that pass still go through sanitize_name.
bool valid_identifier(std::string_view id);

}  // namespace colmet
