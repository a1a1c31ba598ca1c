// A kernel text file opened once (when the backend is built) and read again
// with pread() from offset 0 at every sample. A file that could not be opened
// keeps failing with the reason it could not be opened.
#pragma once

#include "common/unique_fd.hpp"
#include "node/backends/support/StatusText.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace colmet::node::backends {

class KeptFile {
public:
    KeptFile() = default;
    // Open <dir>/<name>. `name` is how the file is named in status texts.
    KeptFile(const std::filesystem::path &dir, std::string_view name);

    bool is_open() const { return m_fd.valid(); }
    // errno of the failed open (0 when open).
    int open_errno() const { return m_open_errno; }
    const std::string &name() const { return m_name; }
    const std::filesystem::path &path() const { return m_path; }

    // Read the whole file. On failure return false and add "<name>: <reason>"
    // to `status`. Allocates only when the file outgrows its buffer.
    bool read(std::string_view &content, StatusText &status) noexcept;

private:
    std::filesystem::path m_path;
    std::string m_name;
    UniqueFd m_fd;
    int m_open_errno = 0;
    std::string m_buf;
};

// strerror() text without allocation or locale lookups.
std::string_view errno_text(int err) noexcept;

}  // namespace colmet::node::backends
