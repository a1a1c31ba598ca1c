#include "ctl/CtlClient.hpp"

#include "common/clock.hpp"
#include "common/unique_fd.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace colmet::ctl {
namespace {

using node::control::ControlAnswer;
using node::control::FrameReader;

Exchange fail(Unreachable kind, std::string message)
{
    Exchange e;
    e.error = ClientError{kind, std::move(message)};
    return e;
}

// Wait for `events` on fd until the deadline (CLOCK_MONOTONIC ns).
bool wait_for(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - monotonic_ns();
        if (left <= 0)
            return false;
        pollfd p{fd, events, 0};
        int n = ::poll(&p, 1, static_cast<int>((left + 999'999) / 1'000'000));
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

}  // namespace

Exchange exchange(const std::filesystem::path &socket, const node::control::ControlRequest &request, int timeout_ms)
{
    const std::string &path = socket.native();
    const int64_t deadline = monotonic_ns() + int64_t{timeout_ms} * 1'000'000;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        return fail(Unreachable::io, "control socket path " + path + " is too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT)
            return fail(Unreachable::no_socket, "no control socket " + path +
                                                    ": no colmet-node samples this job on this host (or it uses "
                                                    "another --control-dir)");
        if (errno == EACCES)
            return fail(Unreachable::permission, "permission denied: " + path);
        return fail(Unreachable::io, path + ": " + std::strerror(errno));
    }

    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid())
        return fail(Unreachable::io, std::string("socket: ") + std::strerror(errno));
    if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0) {
        int err = errno;
        if (err == EACCES || err == EPERM)
            return fail(Unreachable::permission,
                        "permission denied: " + path + " (only root and the job's owner may control a job)");
        if (err == ECONNREFUSED)
            return fail(Unreachable::refused, "nobody listens on " + path + ": the job's colmet-node is gone");
        if (err != EAGAIN && err != EINPROGRESS)
            return fail(Unreachable::io, "connect " + path + ": " + std::strerror(err));
        // Backlog full: the sampler is busy; wait within the deadline.
        if (!wait_for(fd.get(), POLLOUT, deadline))
            return fail(Unreachable::timeout, "the sampler did not accept the connection within the timeout");
    }

    const std::string out = node::control::frame(node::control::encode_request(request));
    size_t sent = 0;
    while (sent < out.size()) {
        ssize_t n = ::send(fd.get(), out.data() + sent, out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            break;  // the sampler may have answered (refused) already: read it below
        if (!wait_for(fd.get(), POLLOUT, deadline))
            return fail(Unreachable::timeout, "the sampler did not take the request within the timeout");
    }

    FrameReader reader;
    char buf[4096];
    while (reader.status() == FrameReader::Status::incomplete) {
        ssize_t n = ::recv(fd.get(), buf, std::min(sizeof buf, reader.wanted()), MSG_DONTWAIT);
        if (n > 0) {
            reader.feed(std::string_view(buf, static_cast<size_t>(n)));
            continue;
        }
        if (n == 0)
            return fail(Unreachable::io, "the sampler closed the connection without an answer");
        if (errno != EAGAIN && errno != EINTR)
            return fail(Unreachable::io, std::string("reading the answer: ") + std::strerror(errno));
        if (!wait_for(fd.get(), POLLIN, deadline)) {
            char within[32];
            std::snprintf(within, sizeof within, "%g", timeout_ms / 1000.0);
            return fail(Unreachable::timeout,
                        std::string("the sampler did not answer within ") + within + " s (is it stopped?)");
        }
    }
    if (reader.status() != FrameReader::Status::complete)
        return fail(Unreachable::io, "the answer's frame is malformed");
    auto answer = node::control::decode_answer(reader.body());
    if (!answer)
        return fail(Unreachable::io, "malformed answer: " + answer.error().message());
    Exchange e;
    e.answer = std::move(*answer);
    return e;
}

}  // namespace colmet::ctl
