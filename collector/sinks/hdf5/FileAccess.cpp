#include "collector/sinks/hdf5/FileAccess.hpp"

#include <acl/libacl.h>
#include <sys/acl.h>

#include <cerrno>
#include <memory>
#include <pwd.h>
#include <unistd.h>

namespace colmet::collector::hdf5 {
namespace {

struct OwnerName {
    FileOwner owner;
    std::string_view name;
};
constexpr OwnerName k_owner_names[] = {{FileOwner::job_user, "job-user"}, {FileOwner::collector, "collector"}};

struct AclFree {
    void operator()(void *p) const { acl_free(p); }
};
using Acl = std::unique_ptr<std::remove_pointer_t<acl_t>, AclFree>;

Result<uid_t> lookup_user(const std::string &user)
{
    long size = sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
    passwd pw{};
    passwd *found = nullptr;
    int err = 0;
    while ((err = getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE && buf.size() < (1u << 20))
        buf.resize(buf.size() * 2);
    if (err != 0)
        return Error::system("look up user", user, err);
    if (!found)
        return Error(Errc::not_found, "user '" + user +
                                          "' is unknown on the collector's host (getpwnam): the "
                                          "file stays readable by the collector's user and group only");
    return pw.pw_uid;
}

bool add_entry(acl_t &acl, acl_tag_t tag, bool write, const uid_t *uid = nullptr)
{
    acl_entry_t entry;
    acl_permset_t perms;
    if (acl_create_entry(&acl, &entry) != 0 || acl_set_tag_type(entry, tag) != 0 ||
        (uid && acl_set_qualifier(entry, uid) != 0) || acl_get_permset(entry, &perms) != 0 ||
        acl_clear_perms(perms) != 0)
        return false;
    if (tag != ACL_OTHER && acl_add_perm(perms, ACL_READ) != 0)
        return false;
    if (write && acl_add_perm(perms, ACL_WRITE) != 0)
        return false;
    return acl_set_permset(entry, perms) == 0;
}

}  // namespace

std::optional<FileOwner> parse_file_owner(std::string_view name)
{
    for (const auto &o : k_owner_names)
        if (o.name == name)
            return o.owner;
    return std::nullopt;
}

std::string_view file_owner_name(FileOwner owner)
{
    for (const auto &o : k_owner_names)
        if (o.owner == owner)
            return o.name;
    return "?";
}

std::string file_owner_names()
{
    std::string names;
    for (const auto &o : k_owner_names)
        names += (names.empty() ? "" : ", ") + std::string(o.name);
    return names;
}

mode_t output_directory_mode(FileOwner owner) { return owner == FileOwner::job_user ? 0711 : 0750; }

Result<void> grant_read(const std::filesystem::path &path, const std::string &user)
{
    auto uid = lookup_user(user);
    if (!uid)
        return uid.error();
    if (*uid == ::geteuid())
        return {};  // the collector's own user owns the file already
    acl_t acl = acl_init(5);
    if (!acl)
        return Error::system("make an ACL for", path.string(), errno);
    // acl_create_entry may replace the handle: free whichever it is at the end.
    struct Release {
        acl_t &acl;
        ~Release() { acl_free(acl); }
    } release{acl};
    if (!add_entry(acl, ACL_USER_OBJ, true) || !add_entry(acl, ACL_USER, false, &*uid) ||
        !add_entry(acl, ACL_GROUP_OBJ, false) || !add_entry(acl, ACL_MASK, false) || !add_entry(acl, ACL_OTHER, false))
        return Error::system("build the ACL for user " + user + " of", path.string(), errno);
    if (acl_valid(acl) != 0)
        return Error(Errc::internal, "the ACL for user " + user + " of " + path.string() + " is not valid");
    if (acl_set_file(path.c_str(), ACL_TYPE_ACCESS, acl) != 0) {
        int err = errno;
        if (err == EOPNOTSUPP)
            return Error(Errc::unsupported,
                         "cannot give user " + user + " read access to " + path.string() +
                             ": its file system has no POSIX ACLs (mount it with ACLs, or set hdf5-owner = "
                             "collector); the file stays readable by the collector's user and group only",
                         err);
        return Error::system("give user " + user + " read access (ACL) to", path.string(), err);
    }
    return {};
}

Result<std::vector<uid_t>> acl_users(const std::filesystem::path &path)
{
    Acl acl{acl_get_file(path.c_str(), ACL_TYPE_ACCESS)};
    if (!acl)
        return Error::system("read the ACL of", path.string(), errno);
    std::vector<uid_t> users;
    acl_entry_t entry;
    for (int which = ACL_FIRST_ENTRY; acl_get_entry(acl.get(), which, &entry) == 1; which = ACL_NEXT_ENTRY) {
        acl_tag_t tag;
        if (acl_get_tag_type(entry, &tag) != 0 || tag != ACL_USER)
            continue;
        if (auto *uid = static_cast<uid_t *>(acl_get_qualifier(entry))) {
            users.push_back(*uid);
            acl_free(uid);
        }
    }
    return users;
}

}  // namespace colmet::collector::hdf5
