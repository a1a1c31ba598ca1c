// The server side of a job's control socket: a non-blocking Unix stream
// socket <dir>/<sanitized job id>.ctl, owned by the job's user with mode
// 0600, polled by the sampler's single thread together with its signalfd.
//
// Nothing here may stall sampling: accept() and read() never block, a
// connection gets one request frame (at most k_max_frame_bytes) within
// `deadline_ns` of its accept, and at most `max_connections` are open at
// once (more are answered "busy" and closed). Peers are checked with
// SO_PEERCRED: root, the job's owner and the sampler's own user only.
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "node/control/ControlProtocol.hpp"

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace colmet::node::control {

struct ControlServerOptions {
    std::filesystem::path dir = "/run/colmet";
    std::string job_id;
    uid_t owner_uid = 0;                       // the job's user; the socket is chowned to it
    gid_t owner_gid = static_cast<gid_t>(-1);  // -1: left as it is
    int64_t deadline_ns = 1'000'000'000;       // whole request and answer, per connection
    size_t max_connections = 4;
};

// Root, the job's owner and the sampler's own effective user may control it.
bool peer_allowed(uid_t peer, uid_t owner, uid_t self);

// The job's user: a user name (getpwnam) or a numeric uid; empty = root.
Result<std::pair<uid_t, gid_t>> resolve_owner(const std::string &user);

struct ControlServerStats {
    uint64_t requests = 0;  // complete request frames handled
    uint64_t refused = 0;   // peers refused (permission, busy, bad frame, timeout)
};

class ControlServer {
public:
    using Handler = std::function<ControlAnswer(const ControlRequest &)>;

    // Create the directory if needed (mode 0755), remove a stale socket of a
    // sampler that is gone, bind, chown and listen. Fails when the path is
    // too long, another sampler answers on it, or it is not a socket.
    static Result<std::unique_ptr<ControlServer>> open(const ControlServerOptions &options);
    ~ControlServer();  // closes every connection and removes the socket file if it is still ours

    ControlServer(const ControlServer &) = delete;
    ControlServer &operator=(const ControlServer &) = delete;

    const std::filesystem::path &path() const { return m_path; }

    // Append the descriptors to poll: the listening socket, then each
    // connection (POLLIN while reading its request, POLLOUT while answering).
    void poll_fds(std::vector<pollfd> &fds) const;
    // Handle what poll() reported on the entries poll_fds() appended (same
    // order, same count), then close connections past their deadline.
    // `now_ns` is CLOCK_MONOTONIC.
    void handle(std::span<const pollfd> fds, int64_t now_ns, const Handler &handler);
    // CLOCK_MONOTONIC time of the earliest connection deadline; INT64_MAX when idle.
    int64_t next_deadline() const;
    size_t connections() const { return m_conns.size(); }
    const ControlServerStats &stats() const { return m_stats; }

private:
    struct Connection {
        UniqueFd fd;
        uid_t peer_uid = 0;
        int64_t deadline = 0;
        FrameReader reader;
        std::string out;  // the framed answer, once there is one
        size_t sent = 0;
        bool closed = false;  // nothing more to do: drop it
    };

    ControlServer() = default;
    void accept_all(int64_t now_ns);
    void read_request(Connection &c, const Handler &handler);
    void answer(Connection &c, const ControlAnswer &a);
    void write_answer(Connection &c);
    bool done(const Connection &c) const;

    ControlServerOptions m_options;
    std::filesystem::path m_path;
    UniqueFd m_listen;
    dev_t m_dev = 0;
    ino_t m_ino = 0;
    uid_t m_self = 0;
    std::vector<std::unique_ptr<Connection>> m_conns;
    ControlServerStats m_stats;
};

}  // namespace colmet::node::control
