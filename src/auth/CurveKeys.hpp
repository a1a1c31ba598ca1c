// CURVE keys (ZeroMQ's CurveZMQ) of colmet's nodes and collector, and the
// two files that hold them. Keys are written in Z85, 40 characters.
//
// A key-pair file (secret; mode 0600, made by colmet-keygen):
//     # comment
//     public-key = <Z85>
//     secret-key = <Z85>
// A public-key file: one "NAME <Z85>" line per key, where NAME is the host
// the key belongs to (the collector's file: its host name; the node files
// the collector reads from its nodes directory: the node's host name, which
// is the only host name messages under that key may carry). Blank lines and
// lines starting with '#' are comments.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::auth {

inline constexpr size_t k_z85_key_length = 40;
// The characters of Z85 (ZeroMQ's RFC 32).
inline constexpr std::string_view k_z85_alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

struct KeyPair {
    std::string public_key;  // Z85
    std::string secret_key;  // Z85
};

struct NamedKey {
    std::string name;
    std::string public_key;  // Z85
};

// A 40-character Z85 string that decodes to a 32-byte key.
bool is_z85_key(std::string_view text);

// Z85 of 32 raw key bytes (the credentials ZAP hands over).
std::string z85_of(std::string_view raw32);

Result<KeyPair> generate_key_pair();

// The text of the two files. `about` goes into the first comment line.
std::string format_key_pair_file(const KeyPair &keys, const std::string &about);
std::string format_public_key_file(const std::string &name, const std::string &public_key);

// Parse; `origin` ("/etc/colmet/node.key") prefixes every error.
Result<KeyPair> parse_key_pair(std::string_view text, const std::string &origin);
Result<std::vector<NamedKey>> parse_public_keys(std::string_view text, const std::string &origin);

// Read a key-pair file. It must be a regular file that neither group nor
// others may read or write (like ssh's private keys): a readable secret key
// would let any user of the node sign in as the node.
Result<KeyPair> read_key_pair_file(const std::filesystem::path &path);

// Read a public-key file: every "<host> <key>" line.
Result<std::vector<NamedKey>> read_public_key_file(const std::filesystem::path &path);

// Read a public-key file and return its first key (the collector's).
Result<std::string> read_server_key_file(const std::filesystem::path &path);

// Write a new file with `mode`, refusing to replace an existing one unless
// `replace`; written to a temporary name and renamed into place.
Result<void> write_key_file(const std::filesystem::path &path, const std::string &content, unsigned mode, bool replace);

}  // namespace colmet::auth
