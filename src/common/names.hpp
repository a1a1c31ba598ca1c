// Turning untrusted identifiers (job ids, host names) into safe file and
// HDF5 object names.
#pragma once

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

// True when the id is acceptable at all: 1..k_max_id_length bytes, printable
// ASCII, no '/' and no NUL. Ids that pass still go through sanitize_name.
bool valid_identifier(std::string_view id);

} // namespace colmet
