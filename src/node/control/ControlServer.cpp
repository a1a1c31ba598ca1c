#include "node/control/ControlServer.hpp"

#include "common/file_io.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>

namespace colmet::node::control {
namespace {

namespace fs = std::filesystem;

constexpr int k_backlog = 8;
constexpr int k_accepts_per_wake = 16;

Result<sockaddr_un> unix_address(const fs::path &path)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string &s = path.native();
    if (s.size() >= sizeof addr.sun_path)
        return Error::invalid("control socket path " + s + " is longer than " +
                              std::to_string(sizeof addr.sun_path - 1) + " bytes");
    std::memcpy(addr.sun_path, s.c_str(), s.size() + 1);
    return addr;
}

// A socket file left behind: remove it if nobody answers on it any more.
Result<void> clear_stale(const fs::path &path, const sockaddr_un &addr)
{
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        return errno == ENOENT ? ok() : Error::system("lstat", path.string(), errno);
    if (!S_ISSOCK(st.st_mode))
        return Error::invalid("control socket " + path.string() + " exists and is not a socket; not touching it");
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!probe.valid())
        return Error::system("socket", path.string(), errno);
    if (::connect(probe.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0 || errno == EAGAIN)
        return Error::invalid("another colmet-node already listens on " + path.string());
    if (errno != ECONNREFUSED)
        return Error::system("connect", path.string(), errno);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        return Error::system("unlink stale socket", path.string(), errno);
    return ok();
}

void send_best_effort(int fd, const std::string &bytes)
{
    // One try: a refused peer gets its answer only if it fits the socket buffer now.
    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

bool peer_allowed(uid_t peer, uid_t owner, uid_t self) { return peer == 0 || peer == owner || peer == self; }

Result<std::pair<uid_t, gid_t>> resolve_owner(const std::string &user)
{
    if (user.empty())
        return std::pair<uid_t, gid_t>{0, 0};
    std::vector<char> buf(16384);
    passwd pw{};
    passwd *found = nullptr;
    int rc = ::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
    if (rc == 0 && found != nullptr)
        return std::pair<uid_t, gid_t>{found->pw_uid, found->pw_gid};
    unsigned long uid = 0;
    auto [end, ec] = std::from_chars(user.data(), user.data() + user.size(), uid);
    if (ec == std::errc() && end == user.data() + user.size() && uid < UINT_MAX)
        return std::pair<uid_t, gid_t>{static_cast<uid_t>(uid), static_cast<gid_t>(-1)};
    return Error(Errc::not_found, "unknown user '" + user + "'", rc);
}

Result<std::unique_ptr<ControlServer>> ControlServer::open(const ControlServerOptions &options)
{
    if (options.dir.empty())
        return Error::invalid("no control directory");
    std::unique_ptr<ControlServer> s(new ControlServer());
    s->m_options = options;
    s->m_self = ::geteuid();
    s->m_path = control_socket_path(options.dir, options.job_id);
    auto addr = unix_address(s->m_path);
    if (!addr)
        return addr.error();
    if (auto r = make_dir(options.dir, true); !r)
        return r.error();
    if (auto r = clear_stale(s->m_path, *addr); !r)
        return r.error();

    s->m_listen.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s->m_listen.valid())
        return Error::system("socket", s->m_path.string(), errno);
    // Created 0600 from the start: the process is single-threaded here.
    mode_t old_mask = ::umask(0177);
    int rc = ::bind(s->m_listen.get(), reinterpret_cast<const sockaddr *>(&*addr), sizeof *addr);
    int bind_errno = errno;
    ::umask(old_mask);
    if (rc != 0)
        return Error::system("bind", s->m_path.string(), bind_errno);
    struct stat st {};
    if (::lstat(s->m_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
        return Error::system("lstat", s->m_path.string(), errno);
    s->m_dev = st.st_dev;
    s->m_ino = st.st_ino;
    // Only root can give the socket away; a sampler run by the job's user
    // keeps it (its own uid is allowed anyway).
    if (s->m_self == 0 && (options.owner_uid != 0 || options.owner_gid != static_cast<gid_t>(-1))) {
        if (::fchownat(AT_FDCWD, s->m_path.c_str(), options.owner_uid, options.owner_gid, AT_SYMLINK_NOFOLLOW) != 0)
            return Error::system("chown", s->m_path.string(), errno);
    }
    if (::listen(s->m_listen.get(), k_backlog) != 0)
        return Error::system("listen", s->m_path.string(), errno);
    return s;
}

ControlServer::~ControlServer()
{
    m_conns.clear();
    if (m_path.empty() || !m_listen.valid())
        return;
    struct stat st {};
    if (::lstat(m_path.c_str(), &st) == 0 && st.st_dev == m_dev && st.st_ino == m_ino)
        ::unlink(m_path.c_str());
}

void ControlServer::poll_fds(std::vector<pollfd> &fds) const
{
    fds.push_back({m_listen.get(), POLLIN, 0});
    for (const auto &c : m_conns)
        fds.push_back({c->fd.get(), static_cast<short>(c->out.empty() ? POLLIN : POLLOUT), 0});
}

int64_t ControlServer::next_deadline() const
{
    int64_t next = INT64_MAX;
    for (const auto &c : m_conns)
        next = std::min(next, c->deadline);
    return next;
}

bool ControlServer::done(const Connection &c) const { return c.closed || (!c.out.empty() && c.sent == c.out.size()); }

void ControlServer::handle(std::span<const pollfd> fds, int64_t now_ns, const Handler &handler)
{
    // Connections first: fds[1..] match m_conns as poll_fds() listed them.
    size_t n = std::min(fds.size() > 0 ? fds.size() - 1 : 0, m_conns.size());
    for (size_t i = 0; i < n; ++i) {
        Connection &c = *m_conns[i];
        short ev = fds[i + 1].revents;
        if (ev == 0 || c.closed)
            continue;
        if (c.out.empty())
            read_request(c, handler);
        else if (ev & (POLLOUT | POLLERR | POLLHUP))
            write_answer(c);
    }
    if (!fds.empty() && (fds[0].revents & POLLIN))
        accept_all(now_ns);
    for (auto &c : m_conns) {
        if (!done(*c) && now_ns >= c->deadline) {
            if (c->out.empty())
                send_best_effort(c->fd.get(), frame(encode_answer(ControlAnswer::reject(
                                                  Rejection::timeout,
                                                  "no complete request frame within the connection's deadline"))));
            ++m_stats.refused;
            c->closed = true;
        }
    }
    std::erase_if(m_conns, [this](const auto &c) { return done(*c); });
}

void ControlServer::accept_all(int64_t now_ns)
{
    for (int i = 0; i < k_accepts_per_wake; ++i) {
        UniqueFd fd(::accept4(m_listen.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd.valid())
            return;  // EAGAIN, or the peer went away (ECONNABORTED): nothing to do
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
            !peer_allowed(cred.uid, m_options.owner_uid, m_self)) {
            ++m_stats.refused;
            send_best_effort(fd.get(), frame(encode_answer(ControlAnswer::reject(
                                           Rejection::permission,
                                           "permission denied: only root and the job's owner may control job " +
                                               m_options.job_id))));
            continue;
        }
        if (m_conns.size() >= m_options.max_connections) {
            ++m_stats.refused;
            send_best_effort(fd.get(), frame(encode_answer(ControlAnswer::reject(
                                           Rejection::busy, "too many control connections at once; try again"))));
            continue;
        }
        auto c = std::make_unique<Connection>();
        c->fd = std::move(fd);
        c->peer_uid = cred.uid;
        c->deadline = now_ns + m_options.deadline_ns;
        m_conns.push_back(std::move(c));
    }
}

void ControlServer::read_request(Connection &c, const Handler &handler)
{
    char buf[4096];
    for (;;) {
        size_t want = std::min(c.reader.wanted(), sizeof buf);
        ssize_t got = ::recv(c.fd.get(), buf, want, MSG_DONTWAIT);
        if (got < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                c.closed = true;
            return;
        }
        if (got == 0) {
            // The peer shut its side before a whole frame: say so if it still listens.
            ++m_stats.refused;
            answer(c, ControlAnswer::reject(Rejection::invalid, "connection closed before a whole request frame"));
            c.closed = true;
            return;
        }
        auto status = c.reader.feed(std::string_view(buf, static_cast<size_t>(got)));
        // An allowed peer's malformed request still learns the settings in
        // force: an empty request is the side-effect-free status query.
        auto with_state = [&handler](ControlAnswer a) {
            a.state = handler(ControlRequest{}).state;
            return a;
        };
        if (status == FrameReader::Status::bad_length) {
            ++m_stats.refused;
            answer(c, with_state(ControlAnswer::reject(
                          Rejection::invalid, "bad frame: declared length " + std::to_string(c.reader.declared()) +
                                                  " is not 1.." + std::to_string(k_max_frame_bytes) +
                                                  " bytes (expected a colmet control request, see docs/control.md)")));
            return;
        }
        if (status == FrameReader::Status::complete) {
            ++m_stats.requests;
            auto request = decode_request(c.reader.body());
            if (!request)
                answer(c, with_state(
                              ControlAnswer::reject(Rejection::invalid, "bad request: " + request.error().message())));
            else if (!request->context.empty() && c.peer_uid != 0)
                answer(c, with_state(ControlAnswer::reject(Rejection::permission,
                                                           "permission denied: only root may set the job's context")));
            else
                answer(c, handler(*request));
            return;
        }
    }
}

void ControlServer::answer(Connection &c, const ControlAnswer &a)
{
    c.out = frame(encode_answer(a));
    c.sent = 0;
    write_answer(c);
}

void ControlServer::write_answer(Connection &c)
{
    while (c.sent < c.out.size()) {
        ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                c.closed = true;
            return;
        }
        c.sent += static_cast<size_t>(n);
    }
}

}  // namespace colmet::node::control
