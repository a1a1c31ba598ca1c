#include "job/Process.hpp"

#include <algorithm>
#include <cstdlib>
#include <grp.h>
#include <pwd.h>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace colmet::job {

Result<std::optional<launch::Credentials>> sudo_invoker()
{
    const char *name = std::getenv("SUDO_USER");
    if (::geteuid() != 0 || name == nullptr || *name == '\0' || std::string_view(name) == "root")
        return std::optional<launch::Credentials>();
    std::vector<char> buf(16384);
    passwd pw{};
    passwd *found = nullptr;
    if (int err = ::getpwnam_r(name, &pw, buf.data(), buf.size(), &found); err != 0 || found == nullptr)
        return Error(Errc::not_found, std::string("sudo's user '") + name +
                                          "' (SUDO_USER) is not known here: cannot run the command as that user "
                                          "(--as-root runs it as root)");
    launch::Credentials c;
    c.user = pw.pw_name;
    c.uid = pw.pw_uid;
    c.gid = pw.pw_gid;
    int n = 64;
    c.groups.resize(static_cast<size_t>(n));
    while (::getgrouplist(pw.pw_name, pw.pw_gid, c.groups.data(), &n) < 0) {
        c.groups.resize(static_cast<size_t>(n) + 16);
        n = static_cast<int>(c.groups.size());
    }
    c.groups.resize(static_cast<size_t>(n));
    const std::string home = pw.pw_dir, shell = pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh";
    const std::vector<std::pair<std::string, std::string>> set = {
        {"HOME", home}, {"USER", c.user}, {"LOGNAME", c.user}, {"SHELL", shell}, {"MAIL", "/var/mail/" + c.user}};
    for (char **e = environ; *e != nullptr; ++e) {
        std::string_view var = *e;
        const std::string_view key = var.substr(0, var.find('='));
        if (std::none_of(set.begin(), set.end(), [key](const auto &kv) { return kv.first == key; }))
            c.env.emplace_back(var);
    }
    for (const auto &[key, value] : set)
        c.env.push_back(std::string(key).append("=").append(value));
    return std::optional<launch::Credentials>(std::move(c));
}

std::filesystem::path find_program(const std::string &name)
{
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    std::vector<std::filesystem::path> dirs;
    if (!ec)
        dirs.push_back(self.parent_path());
    dirs.emplace_back(COLMET_SBINDIR);
    dirs.emplace_back(COLMET_BINDIR);
    if (const char *path = std::getenv("PATH")) {
        std::string p = path;
        size_t start = 0;
        while (start <= p.size()) {
            size_t colon = p.find(':', start);
            dirs.emplace_back(p.substr(start, colon - start));
            if (colon == std::string::npos)
                break;
            start = colon + 1;
        }
    }
    for (const auto &dir : dirs) {
        auto candidate = dir / name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

}  // namespace colmet::job
