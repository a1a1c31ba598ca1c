#include "node/delivery/Spool.hpp"

#include "common/names.hpp"
#include "node/delivery/Outbox.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace colmet::node {
namespace fs = std::filesystem;

namespace {

Result<void> write_all(int fd, const fs::path &path, std::string_view a, std::string_view b = {})
{
    iovec parts[2] = {{const_cast<char *>(a.data()), a.size()}, {const_cast<char *>(b.data()), b.size()}};
    const size_t total = a.size() + b.size();
    // One writev(): a record is either all there or torn at its end.
    ssize_t n = ::writev(fd, parts, b.empty() ? 1 : 2);
    if (n < 0)
        return Error::system("writing", path.string(), errno);
    if (static_cast<size_t>(n) != total)
        return Error::system("writing", path.string(), ENOSPC);
    return ok();
}

Result<UniqueFd> open_locked_new(const fs::path &path)
{
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid())
        return Error::system("creating", path.string(), errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        ::unlink(path.c_str());
        return Error::system("locking", path.string(), err);
    }
    return fd;
}

}  // namespace

Result<void> prepare_spool_dir(const fs::path &dir)
{
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return Error::system("creating the spool directory", dir.string(), errno);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        return Error::system("spool directory", dir.string(), errno);
    if (!S_ISDIR(st.st_mode))
        return Error::invalid("spool directory " + dir.string() + " is not a directory");
    if (st.st_uid != ::geteuid())
        return Error::invalid("spool directory " + dir.string() + " belongs to uid " + std::to_string(st.st_uid) +
                              ", not to this user (uid " + std::to_string(::geteuid()) + ")");
    if ((st.st_mode & 022) != 0)
        return Error::invalid("spool directory " + dir.string() + " is writable by others (mode " +
                              std::to_string(st.st_mode & 0777) + " in decimal): make it 0700");
    return ok();
}

uint64_t spool_dir_usage(const fs::path &dir, const fs::path &except)
{
    uint64_t total = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path &p = it->path();
        if (p.extension() != k_spool_suffix || p == except)
            continue;
        std::error_code size_ec;
        const auto size = fs::file_size(p, size_ec);
        if (!size_ec)
            total += size;
    }
    return total;
}

Spool::Spool(fs::path dir, SpoolHeader header, SpoolLimits limits)
    : m_dir(std::move(dir)), m_header(std::move(header)), m_limits(limits)
{
    m_path = spool_file(m_dir, m_header.job_id, m_header.sender);
    m_bound = m_limits.job_bytes;
    m_start = spool_file_start(m_header).size();
}

Spool::~Spool() = default;

Result<std::unique_ptr<Spool>> Spool::open_existing(const fs::path &path, SpoolContents &contents)
{
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid())
        return Error::system("opening", path.string(), errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return Error(Errc::conflict, path.string() + " is in use (its sampler runs, or another flush)");
        return Error::system("locking", path.string(), errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return Error::system("stat", path.string(), errno);
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
        return Error::invalid(path.string() + " is not a regular file of this user's: left alone");
    std::string bytes(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < bytes.size()) {
        ssize_t n = ::pread(fd.get(), bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
        if (n < 0)
            return Error::system("reading", path.string(), errno);
        if (n == 0)
            break;
        got += static_cast<size_t>(n);
    }
    bytes.resize(got);
    contents = parse_spool(bytes);
    if (!contents.header)
        return Error::parse(path.string() + ": not a colmet spool file, or its header is damaged");
    auto spool = std::unique_ptr<Spool>(new Spool(path.parent_path(), *contents.header, SpoolLimits{}));
    spool->m_path = path;
    spool->m_fd = std::move(fd);
    spool->m_file = got;
    for (const auto &r : contents.records)
        spool->m_live += spool_frame_bytes(r.size);
    // What it holds is what the bound allows, whatever the limits now.
    spool->m_bound = std::max<uint64_t>(got, spool->m_limits.job_bytes);
    return spool;
}

void Spool::update_bound()
{
    const uint64_t others = spool_dir_usage(m_dir, m_path);
    const uint64_t node_room = m_limits.node_bytes > others ? m_limits.node_bytes - others : 0;
    m_bound = std::min(m_limits.job_bytes, node_room);
}

Result<void> Spool::create()
{
    if (auto r = check_spool_header(m_header); !r)
        return r;  // a value spanning lines would make the header unreadable
    if (auto r = prepare_spool_dir(m_dir); !r)
        return r;
    update_bound();
    const std::string start = spool_file_start(m_header);
    if (m_bound < start.size() + spool_frame_bytes(0))
        return Error::invalid("no room left in the node's spool (" + std::to_string(m_limits.node_bytes >> 20) +
                              " MiB for all jobs)");
    auto fd = open_locked_new(m_path);
    if (!fd)
        return fd.error();
    if (auto r = write_all(fd->get(), m_path, start); !r) {
        ::unlink(m_path.c_str());
        return r;
    }
    m_fd = std::move(*fd);
    m_file = start.size();
    m_live = 0;
    return ok();
}

Result<void> Spool::append(OutboxEntry &entry)
{
    if (!m_fd.valid())
        if (auto r = create(); !r)
            return r;
    if (entry.bytes.size() > k_max_spool_payload - k_spool_message_overhead || entry.base_at + 8 > entry.bytes.size())
        return Error::invalid("message of " + std::to_string(entry.bytes.size()) + " bytes cannot be spooled");
    const std::string prefix =
        spool_message_prefix(entry.seq, entry.time_ns, static_cast<uint32_t>(entry.base_at), entry.bytes);
    if (auto r = write_all(m_fd.get(), m_path, prefix, entry.bytes); !r) {
        // A torn record would hide the next ones' start: cut it off.
        if (::ftruncate(m_fd.get(), static_cast<off_t>(m_file)) != 0)
            return r.error().with_context("and cutting off the torn record failed");
        return r;
    }
    entry.spool_offset = m_file + prefix.size();
    entry.spool_size = static_cast<uint32_t>(entry.bytes.size());
    entry.spooled = true;
    m_file += prefix.size() + entry.bytes.size();
    m_live += prefix.size() + entry.bytes.size();
    std::string().swap(entry.bytes);
    return ok();
}

Result<std::string> Spool::read(const OutboxEntry &entry) const
{
    std::string bytes(entry.spool_size, '\0');
    ssize_t n = ::pread(m_fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(entry.spool_offset));
    if (n < 0)
        return Error::system("reading", m_path.string(), errno);
    if (static_cast<size_t>(n) != bytes.size())
        return Error::parse(m_path.string() + ": record of seq " + std::to_string(entry.seq) + " cut short");
    return bytes;
}

void Spool::forget(const OutboxEntry &entry)
{
    const uint64_t size = spool_frame_bytes(entry.spool_size);
    m_live = m_live > size ? m_live - size : 0;
}

Result<void> Spool::compact(std::deque<OutboxEntry> &entries, size_t count)
{
    const fs::path tmp = m_path.string() + ".new";
    ::unlink(tmp.c_str());
    auto fd = open_locked_new(tmp);
    if (!fd)
        return fd.error();
    auto fail = [&](const Error &e) {
        ::unlink(tmp.c_str());
        return e.with_context("rewriting the spool");
    };
    const std::string start = spool_file_start(m_header);
    if (auto r = write_all(fd->get(), tmp, start); !r)
        return fail(r.error());
    uint64_t size = start.size();
    std::vector<uint64_t> offsets;
    offsets.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        const OutboxEntry &e = entries[i];
        auto bytes = read(e);
        if (!bytes)
            return fail(bytes.error());
        const std::string prefix = spool_message_prefix(e.seq, e.time_ns, static_cast<uint32_t>(e.base_at), *bytes);
        if (auto r = write_all(fd->get(), tmp, prefix, *bytes); !r)
            return fail(r.error());
        offsets.push_back(size + prefix.size());
        size += prefix.size() + bytes->size();
    }
    if (::fdatasync(fd->get()) != 0)
        return fail(Error::system("syncing", tmp.string(), errno));
    if (::rename(tmp.c_str(), m_path.c_str()) != 0)
        return fail(Error::system("renaming onto", m_path.string(), errno));
    for (size_t i = 0; i < count; ++i)
        entries[i].spool_offset = offsets[i];
    m_fd = std::move(*fd);
    m_file = size;
    m_live = size - start.size();
    update_bound();
    return ok();
}

void Spool::remove()
{
    if (!m_fd.valid())
        return;
    ::unlink(m_path.c_str());
    m_fd.reset();
    m_file = 0;
    m_live = 0;
}

Result<void> Spool::sync()
{
    if (m_fd.valid() && ::fdatasync(m_fd.get()) != 0)
        return Error::system("syncing", m_path.string(), errno);
    return ok();
}

}  // namespace colmet::node
