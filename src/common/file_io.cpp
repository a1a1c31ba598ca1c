#include "common/file_io.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

namespace colmet {

Result<UniqueFd> open_read(const std::filesystem::path &path)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error::system("open", path.string(), errno);
    return UniqueFd(fd);
}

Result<std::string_view> pread_all(int fd, std::string &buf, const std::filesystem::path &path_for_errors)
{
    if (buf.size() < 4096)
        buf.resize(4096);
    for (;;) {
        size_t total = 0;
        for (;;) {
            ssize_t n = ::pread(fd, buf.data() + total, buf.size() - total, static_cast<off_t>(total));
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return Error::system("read", path_for_errors.string(), errno);
            }
            if (n == 0)
                return std::string_view(buf.data(), total);
            total += static_cast<size_t>(n);
            if (total == buf.size())
                break;
        }
        // The file filled the buffer: it may be longer. Grow and read again from 0
        // so that the content comes from one consistent pass.
        if (buf.size() >= (size_t{64} << 20))
            return Error(Errc::invalid, "read " + path_for_errors.string() + ": file larger than 64 MiB");
        buf.resize(buf.size() * 2);
    }
}

bool path_exists(const std::filesystem::path &path)
{
    std::error_code ec;
    return std::filesystem::exists(path, ec);
}

Result<std::string> read_file(const std::filesystem::path &path)
{
    auto fd = open_read(path);
    if (!fd)
        return fd.error();
    std::string buf;
    auto view = pread_all(fd->get(), buf, path);
    if (!view)
        return view.error();
    buf.resize(view->size());
    return buf;
}

Result<void> make_dir(const std::filesystem::path &dir, bool parents)
{
    std::error_code ec;
    if (parents && dir.has_parent_path() && dir.parent_path() != dir)
        std::filesystem::create_directories(dir.parent_path(), ec);  // a failure shows in the mkdir below
    if (::mkdir(dir.c_str(), 0755) == 0)
        return {};
    const int err = errno;
    if (err == EEXIST && std::filesystem::is_directory(dir, ec))
        return {};
    return Error::system("mkdir", dir.string(), err);
}

Result<void> write_file(const std::filesystem::path &path, std::string_view content)
{
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return Error::system("open", path.string(), errno);
    UniqueFd guard(fd);
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0)
        return Error::system("write", path.string(), errno);
    if (static_cast<size_t>(n) != content.size())
        return Error(Errc::system, "write " + path.string() + ": short write");
    return ok();
}

Result<void> write_file_atomic(const std::filesystem::path &path, std::string_view content, const AtomicWrite &how)
{
    std::filesystem::path tmp = how.tmp;
    if (tmp.empty())
        tmp = path.string() + ".tmp";
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, how.mode));
    if (!fd.valid())
        return Error::system("create", tmp.string(), errno);
    auto fail = [&tmp](const Error &e) {
        ::unlink(tmp.c_str());
        return e;
    };
    if (::fchmod(fd.get(), how.mode) != 0)  // the umask may have taken bits away
        return fail(Error::system("chmod", tmp.string(), errno));
    for (size_t done = 0; done < content.size();) {
        const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(Error::system("write", tmp.string(), errno));
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0)
        return fail(Error::system("fsync", tmp.string(), errno));
    if (::close(fd.release()) != 0)
        return fail(Error::system("close", tmp.string(), errno));
    if (how.before_rename)
        if (auto r = how.before_rename(tmp); !r)
            return fail(r.error());
    const int moved = how.replace ? ::rename(tmp.c_str(), path.c_str())
                                  : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    if (moved != 0)
        return fail(Error::system("rename into", path.string(), errno));
    return ok();
}

}  // namespace colmet
