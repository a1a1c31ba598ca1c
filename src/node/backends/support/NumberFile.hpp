// A sysfs file holding one number (energy_uj, temp, port_xmit_data), opened
// once and read with pread() from offset 0 at every sample into a buffer on
// the stack: no allocation. How the file is opened can be replaced (tests
// inject errors such as EACCES that root would never see).
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace colmet::node::backends {

// Opens a file read-only; open_read() in production.
using OpenFileFn = Result<UniqueFd> (*)(const std::filesystem::path &);

class NumberFile {
public:
    NumberFile() = default;
    explicit NumberFile(const std::filesystem::path &path, OpenFileFn open = nullptr);

    bool is_open() const { return m_fd.valid(); }
    // errno of the failed open, or of the last failed read; 0 after a good read.
    int error() const { return m_errno; }
    const std::filesystem::path &path() const { return m_path; }

    // The number in the file; nullopt on a read error (error() says which)
    // or when the text is not a number (error() is EINVAL).
    std::optional<uint64_t> read_u64() noexcept;
    std::optional<int64_t> read_i64() noexcept;

private:
    bool read_text(char *buf, size_t size, size_t &len) noexcept;
    template <typename T>
    std::optional<T> read_number(std::optional<T> (*parse)(std::string_view)) noexcept;

    std::filesystem::path m_path;
    UniqueFd m_fd;
    int m_errno = 0;
};

}  // namespace colmet::node::backends
