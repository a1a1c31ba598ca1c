#include "auth/NodeKeys.hpp"

#include <algorithm>
#include <cerrno>
#include <sys/stat.h>
#include <vector>

namespace colmet::auth {
namespace {

bool is_leftover(const std::string &name)
{
    auto ends_with = [&](std::string_view end) {
        return name.size() >= end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
    };
    return name.empty() || name.front() == '.' || ends_with("~") || ends_with(".swp") ||
           name.find(".dpkg-") != std::string::npos || name.find(".rpm") != std::string::npos;
}

}  // namespace

bool NodeKeys::allows(std::string_view public_key, std::string_view host) const
{
    auto it = m_hosts.find(public_key);
    return it != m_hosts.end() && it->second.find(host) != it->second.end();
}

Result<NodeKeys> NodeKeys::load(const std::filesystem::path &dir)
{
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (!is_leftover(it->path().filename().string()))
            files.push_back(it->path());
    }
    if (ec)
        return Error::system("read nodes directory", dir.string(), ec.value());
    std::sort(files.begin(), files.end());

    NodeKeys registry;
    for (const auto &path : files) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            return Error::system("read", path.string(), errno);
        if (S_ISDIR(st.st_mode))
            continue;
        if (!S_ISREG(st.st_mode))
            return Error::invalid(path.string() + ": not a regular file");
        // Whoever may write a key file may let any key in.
        if (st.st_mode & (S_IWGRP | S_IWOTH))
            return Error::invalid(path.string() + ": writable by group or others; run: chmod go-w " + path.string());
        auto keys = read_public_key_file(path);
        if (!keys)
            return keys.error();
        for (const auto &key : *keys)
            registry.add(key);
        ++registry.m_files;
    }
    if (registry.m_hosts.empty())
        return Error::invalid(dir.string() + ": no node key file (make them with colmet-keygen --host NAME)");
    return registry;
}

}  // namespace colmet::auth
