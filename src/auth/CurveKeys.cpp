#include "auth/CurveKeys.hpp"

#include "common/file_io.hpp"
#include "common/text.hpp"

#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace colmet::auth {
namespace {

Error line_error(const std::string &origin, size_t line, const std::string &what)
{
    return Error::parse(origin + ":" + std::to_string(line) + ": " + what);
}

// "key = value" → {key, value}, trimmed; empty key when there is no '='.
std::pair<std::string_view, std::string_view> split_assignment(std::string_view line)
{
    auto eq = line.find('=');
    if (eq == std::string_view::npos)
        return {};
    return {text::trim(line.substr(0, eq)), text::trim(line.substr(eq + 1))};
}

// The lines that are neither blank nor comments, trimmed, with their numbers.
std::vector<std::pair<size_t, std::string_view>> meaningful_lines(std::string_view content)
{
    std::vector<std::pair<size_t, std::string_view>> out;
    size_t number = 0;
    for (std::string_view raw : text::Lines(content)) {
        ++number;
        auto line = text::trim(raw);
        if (!line.empty() && line.front() != '#')
            out.emplace_back(number, line);
    }
    return out;
}

}  // namespace

bool is_z85_key(std::string_view text)
{
    // zmq_z85_decode reads a C string: a NUL inside would end the key early.
    if (text.size() != k_z85_key_length || text.find_first_not_of(k_z85_alphabet) != std::string_view::npos)
        return false;
    std::string copy(text);
    uint8_t raw[32];
    return zmq_z85_decode(raw, copy.c_str()) != nullptr;
}

std::string z85_of(std::string_view raw32)
{
    if (raw32.size() != 32)
        return {};
    char out[k_z85_key_length + 1];
    if (!zmq_z85_encode(out, reinterpret_cast<const uint8_t *>(raw32.data()), 32))
        return {};
    return std::string(out, k_z85_key_length);
}

Result<KeyPair> generate_key_pair()
{
    char pub[k_z85_key_length + 1];
    char sec[k_z85_key_length + 1];
    if (zmq_curve_keypair(pub, sec) != 0)
        return Error(Errc::unsupported,
                     std::string("cannot make a CURVE key pair (is libzmq built with libsodium?): ") +
                         zmq_strerror(zmq_errno()),
                     zmq_errno());
    return KeyPair{pub, sec};
}

std::string format_key_pair_file(const KeyPair &keys, const std::string &about)
{
    return "# colmet CURVE key pair of " + about +
           ", made by colmet-keygen.\n"
           "# Keep it secret: mode 0600. Its public half goes to the other side.\n"
           "public-key = " +
           keys.public_key + "\nsecret-key = " + keys.secret_key + "\n";
}

std::string format_public_key_file(const std::string &name, const std::string &public_key)
{
    return "# colmet CURVE public key of " + name + ", made by colmet-keygen: \"<host> <key>\" lines.\n" + name + " " +
           public_key + "\n";
}

Result<KeyPair> parse_key_pair(std::string_view content, const std::string &origin)
{
    KeyPair keys;
    for (auto [number, line] : meaningful_lines(content)) {
        auto [key, value] = split_assignment(line);
        std::string *slot = key == "public-key" ? &keys.public_key : key == "secret-key" ? &keys.secret_key : nullptr;
        if (!slot)
            return line_error(origin, number, "expected 'public-key = <key>' or 'secret-key = <key>'");
        if (!is_z85_key(value))
            return line_error(origin, number, std::string(key) + " is not a 40-character Z85 CURVE key");
        if (!slot->empty())
            return line_error(origin, number, std::string(key) + " is given twice");
        *slot = std::string(value);
    }
    if (keys.public_key.empty() || keys.secret_key.empty())
        return Error::parse(origin + ": a key-pair file needs both public-key and secret-key (made by colmet-keygen)");
    // The public key must be the secret key's: a mismatch would fail every
    // handshake with no clear reason.
    char derived[k_z85_key_length + 1];
    if (zmq_curve_public(derived, keys.secret_key.c_str()) != 0 || keys.public_key != derived)
        return Error::invalid(origin + ": public-key does not belong to secret-key");
    return keys;
}

Result<std::vector<NamedKey>> parse_public_keys(std::string_view content, const std::string &origin)
{
    std::vector<NamedKey> keys;
    for (auto [number, line] : meaningful_lines(content)) {
        auto blank = line.find_first_of(" \t");
        if (blank == std::string_view::npos)
            return line_error(origin, number, "expected '<host> <public key>'");
        auto name = line.substr(0, blank);
        auto key = text::trim(line.substr(blank + 1));
        if (name.size() > 255 || name.find('=') != std::string_view::npos)
            return line_error(origin, number, "'" + std::string(name) + "' is not a host name");
        if (!is_z85_key(key))
            return line_error(origin, number, "'" + std::string(key) + "' is not a 40-character Z85 CURVE public key");
        keys.push_back({std::string(name), std::string(key)});
    }
    if (keys.empty())
        return Error::parse(origin + ": no '<host> <public key>' line");
    return keys;
}

Result<KeyPair> read_key_pair_file(const std::filesystem::path &path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return Error::system("read key-pair file", path.string(), errno);
    if (!S_ISREG(st.st_mode))
        return Error::invalid(path.string() + ": not a regular file");
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        return Error::invalid(path.string() + ": a secret key must be readable by its owner only (mode " +
                              std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                              std::to_string(st.st_mode & 7) + "); run: chmod 600 " + path.string());
    auto content = read_file(path);
    if (!content)
        return content.error();
    return parse_key_pair(*content, path.string());
}

Result<std::vector<NamedKey>> read_public_key_file(const std::filesystem::path &path)
{
    auto content = read_file(path);
    if (!content)
        return content.error();
    return parse_public_keys(*content, path.string());
}

Result<std::string> read_server_key_file(const std::filesystem::path &path)
{
    auto keys = read_public_key_file(path);
    if (!keys)
        return keys.error();
    return keys->front().public_key;
}

Result<void> write_key_file(const std::filesystem::path &path, const std::string &content, unsigned mode, bool replace)
{
    if (!replace && ::access(path.c_str(), F_OK) == 0)
        return Error::invalid(path.string() + " exists; give --force to replace it");
    // Without --force, an existing file is never replaced, even one made
    // since the check above.
    return write_file_atomic(
        path, content, {static_cast<mode_t>(mode), path.string() + ".tmp-" + std::to_string(::getpid()), replace, {}});
}

}  // namespace colmet::auth
