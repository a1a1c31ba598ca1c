#include "node/backends/processes/CgroupProcs.hpp"

#include "node/backends/processes/proc_parsers.hpp"
#include "node/backends/support/KeptFile.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace colmet::node::backends {

Result<CgroupProcs> CgroupProcs::open(const std::filesystem::path &dir)
{
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return Error::system("open", dir.string(), errno);
    UniqueFd guard(fd);
    if (::faccessat(fd, "cgroup.procs", R_OK, 0) != 0)
        return Error::system("open", (dir / "cgroup.procs").string(), errno);
    return CgroupProcs(std::move(guard));
}

bool CgroupProcs::list(std::vector<pid_t> &pids, StatusText &status, size_t enough) noexcept
{
    pids.clear();
    try {
        int err = read_procs(m_dir.get(), pids);
        if (err != 0) {
            status.item("cgroup.procs: ").add(errno_text(err));
            return false;
        }
        if (pids.size() < enough)
            walk_children(m_dir.get(), 1, pids, enough);
    } catch (...) {  // std::bad_alloc growing the buffers
        status.item("cgroup.procs: out of memory");
        return false;
    }
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    return true;
}

int CgroupProcs::read_procs(int dirfd, std::vector<pid_t> &pids)
{
    int fd = ::openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    UniqueFd guard(fd);
    if (m_buf.size() < 4096)
        m_buf.resize(4096);
    size_t total = 0;
    for (;;) {
        if (total == m_buf.size())
            m_buf.resize(m_buf.size() * 2);
        ssize_t n = ::read(fd, m_buf.data() + total, m_buf.size() - total);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            break;
        total += static_cast<size_t>(n);
    }
    // A pid list the kernel wrote cannot be malformed; ignore it if it is.
    (void)parse_pid_list(std::string_view(m_buf.data(), total), pids);
    return 0;
}

void CgroupProcs::walk_children(int dirfd, int depth, std::vector<pid_t> &pids, size_t enough)
{
    if (depth > k_max_depth || ::lseek(dirfd, 0, SEEK_SET) < 0)
        return;
    alignas(8) char buf[2048];  // one per nesting level, on the stack
    for (;;) {
        ssize_t n = ::getdents64(dirfd, buf, sizeof buf);
        if (n <= 0)
            return;
        for (size_t off = 0; off < static_cast<size_t>(n);) {
            unsigned short reclen = 0;
            unsigned char type = DT_UNKNOWN;
            std::memcpy(&reclen, buf + off + offsetof(dirent64, d_reclen), sizeof reclen);
            std::memcpy(&type, buf + off + offsetof(dirent64, d_type), sizeof type);
            const char *name = buf + off + offsetof(dirent64, d_name);
            off += reclen;
            if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0)
                continue;
            if (type == DT_UNKNOWN) {
                struct stat st {};
                if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                    type = DT_DIR;
            }
            if (type != DT_DIR)
                continue;
            int child = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (child < 0)
                continue;  // removed meanwhile
            UniqueFd guard(child);
            (void)read_procs(child, pids);  // a sub-cgroup removed meanwhile lists nothing
            if (pids.size() >= enough)
                return;
            walk_children(child, depth + 1, pids, enough);
            if (pids.size() >= enough)
                return;
        }
    }
}

}  // namespace colmet::node::backends
