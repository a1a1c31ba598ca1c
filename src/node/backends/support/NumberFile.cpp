#include "node/backends/support/NumberFile.hpp"

#include "common/file_io.hpp"
#include "common/text.hpp"

#include <cerrno>
#include <string_view>
#include <unistd.h>

namespace colmet::node::backends {

NumberFile::NumberFile(const std::filesystem::path &path, OpenFileFn open) : m_path(path)
{
    auto fd = open ? open(path) : open_read(path);
    if (fd) {
        m_fd = std::move(*fd);
    } else {
        m_errno = fd.error().sys_errno() != 0 ? fd.error().sys_errno() : EIO;
    }
}

bool NumberFile::read_text(char *buf, size_t size, size_t &len) noexcept
{
    if (!m_fd.valid())
        return false;  // m_errno still says why the open failed
    ssize_t n = ::pread(m_fd.get(), buf, size, 0);
    if (n < 0) {
        m_errno = errno;
        return false;
    }
    len = static_cast<size_t>(n);
    m_errno = 0;
    return true;
}

template <typename T>
std::optional<T> NumberFile::read_number(std::optional<T> (*parse)(std::string_view)) noexcept
{
    char buf[64];
    size_t len = 0;
    if (!read_text(buf, sizeof buf, len))
        return std::nullopt;
    auto v = parse(std::string_view(buf, len));
    if (!v)
        m_errno = EINVAL;
    return v;
}

std::optional<uint64_t> NumberFile::read_u64() noexcept { return read_number(&text::parse_u64); }

std::optional<int64_t> NumberFile::read_i64() noexcept { return read_number(&text::parse_i64); }

}  // namespace colmet::node::backends
