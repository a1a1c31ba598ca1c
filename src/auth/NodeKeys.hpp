// The nodes a collector accepts: the public-key files in its nodes
// directory (/etc/colmet/nodes.d/), each with "<host> <public key>" lines
// (see CurveKeys.hpp). One file per node or per group of nodes.
//
// A key is bound to the host names it is listed with: a message under that
// key must carry one of them. Listing one key for several hosts (a shared
// key for a group of nodes) lets those hosts speak for each other.
#pragma once

#include "auth/CurveKeys.hpp"
#include "common/result.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace colmet::auth {

class NodeKeys {
public:
    // Read every file of `dir` except hidden ones and editor or package
    // leftovers (*~, *.dpkg-*, *.rpm*, *.swp). An unreadable or malformed
    // file, a file others may write, or no key at all is an error.
    static Result<NodeKeys> load(const std::filesystem::path &dir);

    // Build from parsed keys (tests, and load()).
    void add(const NamedKey &key) { m_hosts[key.public_key].insert(key.name); }

    bool knows(std::string_view public_key) const { return m_hosts.find(public_key) != m_hosts.end(); }
    // The key is registered for this host.
    bool allows(std::string_view public_key, std::string_view host) const;

    size_t keys() const { return m_hosts.size(); }
    size_t files() const { return m_files; }

private:
    // public key (Z85) → host names; transparent, so that the check of every
    // message looks up its views without making strings
    std::map<std::string, std::set<std::string, std::less<>>, std::less<>> m_hosts;
    size_t m_files = 0;
};

}  // namespace colmet::auth
