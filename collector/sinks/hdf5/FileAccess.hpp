// Who may read a job's file. The collector owns every file it writes, so it
// can reopen them later without any privilege; the files are born mode 0640
// (the collector's user writes, its group reads, others nothing), and with
// the job-user rule the job's user (the "user" of its job_start metadata)
// gets a POSIX ACL entry to read the file too. Setting an ACL on one's own
// file needs no capability, so the collector needs none for this (an
// unprivileged collector works as it is). Nobody else reads the file.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace colmet::collector::hdf5 {

enum class FileOwner {
    job_user,   // the job's user may read its file (POSIX ACL); the default
    collector,  // only the collector's user and group may read the files
};

// The names of the hdf5-owner setting, for options and messages.
std::optional<FileOwner> parse_file_owner(std::string_view name);
std::string_view file_owner_name(FileOwner owner);
std::string file_owner_names();  // "job-user, collector"

// The umask under which job files are created (files 0640).
inline constexpr mode_t k_job_file_umask = 027;
// The mode of an output directory the sink creates itself: users may reach
// their own files by name (job-user) but list nobody's.
mode_t output_directory_mode(FileOwner owner);

// Give `user` read access to `path` with an ACL entry: owner rw, the user
// r, the owning group r, others nothing. Fails with Errc::not_found for a
// user unknown to this host, Errc::unsupported where the file system has no
// POSIX ACLs, else the errno of acl_set_file.
Result<void> grant_read(const std::filesystem::path &path, const std::string &user);

// The users named in `path`'s ACL entries, for tests and checks.
Result<std::vector<uid_t>> acl_users(const std::filesystem::path &path);

}  // namespace colmet::collector::hdf5
