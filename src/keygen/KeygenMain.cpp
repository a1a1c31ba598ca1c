#include "keygen/KeygenMain.hpp"

#include "auth/CurveKeys.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace colmet::keygen {
namespace {

constexpr int k_exit_usage = 64;
constexpr int k_exit_cannot_create = 73;

struct KeygenOptions {
    std::string secret_key;
    std::string public_key;
    std::string public_of;
    std::string host;
    bool force = false;
};

std::string this_host()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
        return "localhost";
    return name;
}

int fail(int code, const std::string &message)
{
    std::cerr << "colmet-keygen: " << message << "\n";
    return code;
}

}  // namespace

int keygen_main(int argc, char **argv)
{
    CLI::App app{"colmet-keygen: make the CURVE key pair of a colmet node or collector", "colmet-keygen"};
    app.set_version_flag("--version", std::string("colmet-keygen ") + COLMET_VERSION);
    KeygenOptions o;
    app.add_option("--secret-key", o.secret_key,
                   "Key-pair file to create (mode 0600): the node's or the collector's curve-secret-key");
    app.add_option("--public-key", o.public_key,
                   "Public-key file to create (mode 0644), one '<host> <key>' line: for the collector's nodes "
                   "directory, or the nodes' curve-server-key (default: print the line)");
    app.add_option("--public-of", o.public_of,
                   "Print the '<host> <key>' line of an existing key-pair file, make nothing");
    app.add_option("--host", o.host, "Host name the public key is registered for (default: this host's name)");
    app.add_flag("--force", o.force, "Replace existing files");
    try {
        app.parse(argc, argv);
        if (o.secret_key.empty() && o.public_of.empty())
            throw CLI::RequiredError("--secret-key FILE (or --public-of FILE)");
        if (!o.public_of.empty() && (!o.public_key.empty() || !o.secret_key.empty()))
            throw CLI::ValidationError("--public-of", "makes nothing: give it without --secret-key and --public-key");
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : k_exit_usage;
    }
    const std::string host = o.host.empty() ? this_host() : o.host;
    if (host.find_first_of(" \t\n=#") != std::string::npos || host.size() > 255)
        return fail(k_exit_usage, "'" + host + "' is not a host name");

    if (!o.public_of.empty()) {
        auto pair = auth::read_key_pair_file(o.public_of);
        if (!pair)
            return fail(k_exit_usage, pair.error().message());
        std::cout << host << " " << pair->public_key << "\n";
        return 0;
    }

    auto pair = auth::generate_key_pair();
    if (!pair)
        return fail(69, pair.error().message());
    if (auto r = auth::write_key_file(o.secret_key, auth::format_key_pair_file(*pair, host), 0600, o.force); !r)
        return fail(k_exit_cannot_create, r.error().message());
    const std::string line = auth::format_public_key_file(host, pair->public_key);
    if (o.public_key.empty()) {
        std::cout << host << " " << pair->public_key << "\n";
    } else if (auto r = auth::write_key_file(o.public_key, line, 0644, o.force); !r) {
        return fail(k_exit_cannot_create, r.error().message() + " (the key pair is in " + o.secret_key + ")");
    }
    std::cerr << "colmet-keygen: key pair of " << host << " written to " << o.secret_key << " (mode 0600)"
              << (o.public_key.empty() ? "" : "; public key to " + o.public_key) << "\n";
    return 0;
}

}  // namespace colmet::keygen
