#include "node/backends/support/KeptFile.hpp"

#include "common/file_io.hpp"

#include <cerrno>
#include <cstring>

namespace colmet::node::backends {

KeptFile::KeptFile(const std::filesystem::path &dir, std::string_view name) : m_path(dir / name), m_name(name)
{
    auto fd = open_read(m_path);
    if (fd) {
        m_fd = std::move(*fd);
        m_buf.resize(4096);
    } else {
        m_open_errno = fd.error().sys_errno() != 0 ? fd.error().sys_errno() : EIO;
    }
}

bool KeptFile::read(std::string_view &content, StatusText &status) noexcept
{
    if (!m_fd.valid()) {
        status.item(m_name).add(": ").add(m_open_errno != 0 ? errno_text(m_open_errno) : "not opened");
        return false;
    }
    try {
        auto view = pread_all(m_fd.get(), m_buf, m_path);
        if (view) {
            content = *view;
            return true;
        }
        int err = view.error().sys_errno();
        status.item(m_name).add(": ").add(err != 0 ? errno_text(err) : std::string_view("read failed"));
    } catch (...) {  // std::bad_alloc while growing the buffer
        status.item(m_name).add(": out of memory");
    }
    return false;
}

std::string_view errno_text(int err) noexcept
{
    const char *text = strerrordesc_np(err);
    return text != nullptr ? std::string_view(text) : std::string_view("unknown error");
}

}  // namespace colmet::node::backends
