// Small, allocation-aware helpers to read kernel text files (sysfs, procfs,
// cgroupfs). Readers keep a UniqueFd open and pread() it every sample.
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace colmet {

// Open a file read-only (O_CLOEXEC).
Result<UniqueFd> open_read(const std::filesystem::path &path);

// pread() the whole file from offset 0 into buf (growing it if the content
// does not fit) and return a view of the bytes read. Allocates only when the
// file grew past the buffer's capacity.
Result<std::string_view> pread_all(int fd, std::string &buf, const std::filesystem::path &path_for_errors);

// True when `path` exists (symlinks followed); false on any error.
bool path_exists(const std::filesystem::path &path);

// Read a whole file in one go (open, read, close).
Result<std::string> read_file(const std::filesystem::path &path);

// mkdir(dir, 0755) (its missing parents first when `parents`); a directory
// that exists already is fine.
Result<void> make_dir(const std::filesystem::path &dir, bool parents = false);

// Write a string to an existing file (cgroupfs control files), no O_CREAT.
Result<void> write_file(const std::filesystem::path &path, std::string_view content);

// How write_file_atomic() makes its file.
struct AtomicWrite {
    mode_t mode = 0644;         // the file's mode, exactly (the umask does not apply)
    std::filesystem::path tmp;  // the temporary file beside it (empty: <path>.tmp)
    bool replace = true;        // false: an existing file is never replaced, even one made meanwhile
    // Run on the complete temporary file before it takes the name (an ACL
    // entry): an error stops the write.
    std::function<Result<void>(const std::filesystem::path &tmp)> before_rename;
};

// Write a whole file so that a reader sees the old one or the new one, never
// a part: the content into the temporary file (created, symlinks refused),
// fsync, then rename over `path`. On any failure the temporary file is
// removed and `path` is as it was.
Result<void> write_file_atomic(const std::filesystem::path &path, std::string_view content,
                               const AtomicWrite &how = {});

}  // namespace colmet
