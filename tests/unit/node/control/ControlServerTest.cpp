// The control socket server on a real Unix socket in a temporary directory,
// driven by a poll loop in a thread, with colmet-ctl's client on the other
// side: well-formed requests, garbage, oversized frames, silent clients,
// too many clients, peers that are not allowed, stale sockets.
#include "node/control/ControlServer.hpp"
#include "ctl/CtlClient.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

using namespace colmet;
using namespace colmet::node::control;

namespace {

int64_t mono_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Runs the server's poll loop in a thread, as the sampler does.
class ServerLoop {
public:
    explicit ServerLoop(ControlServer &server) : m_server(server)
    {
        m_thread = std::thread([this] {
            std::vector<pollfd> fds;
            while (!m_stop) {
                fds.clear();
                m_server.poll_fds(fds);
                ::poll(fds.data(), fds.size(), 10);
                m_server.handle(fds, mono_ns(), [this](const ControlRequest &r) {
                    ++handled;
                    last = r;
                    ControlAnswer a;
                    a.accepted = true;
                    a.changed = {"sample_period"};
                    a.state = ControlState{"job-1", r.period_s.value_or(5), "off", {}, 1, 0, "tcp://x", "", 0, 0, 0};
                    return a;
                });
                open_connections = m_server.connections();
                ++loops;
            }
        });
    }
    ~ServerLoop()
    {
        m_stop = true;
        m_thread.join();
    }
    std::atomic<int> handled{0};
    std::atomic<long> loops{0};
    std::atomic<size_t> open_connections{0};
    ControlRequest last;

private:
    ControlServer &m_server;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

int connect_raw(const std::filesystem::path &path)
{
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    timeval tv{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

// Read one answer frame (blocking, 3 s receive timeout).
Result<ControlAnswer> read_answer(int fd)
{
    FrameReader reader;
    char buf[4096];
    while (reader.status() == FrameReader::Status::incomplete) {
        ssize_t n = ::recv(fd, buf, std::min(sizeof buf, reader.wanted()), 0);
        if (n <= 0)
            return Error::parse("no answer");
        reader.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    return decode_answer(reader.body());
}

class ControlServerTest : public ::testing::Test {
protected:
    ControlServerOptions options()
    {
        ControlServerOptions o;
        o.dir = tree.path("run/colmet");
        o.job_id = "job-1";
        o.owner_uid = ::geteuid();
        o.deadline_ns = 200'000'000;
        return o;
    }
    test::FakeTree tree;
};

}  // namespace

TEST(PeerTest, root_the_owner_and_the_sampler_itself_only)
{
    EXPECT_TRUE(peer_allowed(0, 1000, 0));
    EXPECT_TRUE(peer_allowed(1000, 1000, 0));
    EXPECT_TRUE(peer_allowed(500, 1000, 500));
    EXPECT_FALSE(peer_allowed(1001, 1000, 0));
    EXPECT_FALSE(peer_allowed(65534, 1000, 0));
}

TEST(PeerTest, resolves_owner_names_and_numbers)
{
    auto root = resolve_owner("root");
    ASSERT_TRUE(root);
    EXPECT_EQ(root->first, 0u);
    auto nobody = resolve_owner("");
    ASSERT_TRUE(nobody);
    EXPECT_EQ(nobody->first, 0u);
    auto number = resolve_owner("123456");
    ASSERT_TRUE(number);
    EXPECT_EQ(number->first, 123456u);
    EXPECT_FALSE(resolve_owner("no-such-user-colmet-test"));
}

TEST_F(ControlServerTest, creates_a_0600_socket_and_removes_it_at_the_end)
{
    std::filesystem::path path;
    {
        auto server = ControlServer::open(options());
        ASSERT_TRUE(server) << server.error().message();
        path = (*server)->path();
        EXPECT_EQ(path, tree.path("run/colmet/job-1.ctl"));
        struct stat st {};
        ASSERT_EQ(::lstat(path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISSOCK(st.st_mode));
        EXPECT_EQ(st.st_mode & 0777, 0600u);
        EXPECT_EQ(st.st_uid, ::geteuid());
    }
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ControlServerTest, answers_a_request_from_colmet_ctl)
{
    auto server = ControlServer::open(options());
    ASSERT_TRUE(server) << server.error().message();
    ServerLoop loop(**server);
    ControlRequest r;
    r.period_s = 0.5;
    auto e = ctl::exchange((*server)->path(), r, 2000);
    ASSERT_FALSE(e.error) << e.error->message;
    ASSERT_TRUE(e.answer);
    EXPECT_TRUE(e.answer->accepted);
    ASSERT_TRUE(e.answer->state);
    EXPECT_EQ(e.answer->state->period_s, 0.5);
    EXPECT_EQ(loop.handled, 1);
}

TEST_F(ControlServerTest, garbage_gets_an_error_answer_and_the_loop_keeps_going)
{
    auto server = ControlServer::open(options());
    ASSERT_TRUE(server);
    ServerLoop loop(**server);

    int fd = connect_raw((*server)->path());
    ASSERT_GE(fd, 0);
    const char garbage[] = "hello, is this the sampler?\n";
    ASSERT_GT(::send(fd, garbage, sizeof garbage - 1, MSG_NOSIGNAL), 0);
    auto a = read_answer(fd);
    ::close(fd);
    ASSERT_TRUE(a) << a.error().message();
    EXPECT_FALSE(a->accepted);
    EXPECT_EQ(a->code, Rejection::invalid);
    EXPECT_NE(a->reason.find("bad frame"), std::string::npos) << a->reason;

    // A well-framed body that is not a request.
    fd = connect_raw((*server)->path());
    std::string bad = frame("\x93\x01\x02\x03");
    ASSERT_GT(::send(fd, bad.data(), bad.size(), MSG_NOSIGNAL), 0);
    a = read_answer(fd);
    ::close(fd);
    ASSERT_TRUE(a);
    EXPECT_FALSE(a->accepted);
    EXPECT_NE(a->reason.find("bad request"), std::string::npos) << a->reason;
    // The settings in force come with the rejection (from a status query).
    ASSERT_TRUE(a->state);
    EXPECT_EQ(a->state->job_id, "job-1");
    EXPECT_FALSE(loop.last.period_s);

    auto e = ctl::exchange((*server)->path(), ControlRequest{}, 2000);
    ASSERT_TRUE(e.answer);
    EXPECT_TRUE(e.answer->accepted);
}

TEST_F(ControlServerTest, a_silent_client_times_out_without_blocking_others)
{
    auto server = ControlServer::open(options());
    ASSERT_TRUE(server);
    ServerLoop loop(**server);
    int silent = connect_raw((*server)->path());
    ASSERT_GE(silent, 0);
    // Half a frame header, then nothing.
    ASSERT_EQ(::send(silent, "\0\0", 2, MSG_NOSIGNAL), 2);

    auto t0 = mono_ns();
    auto e = ctl::exchange((*server)->path(), ControlRequest{}, 2000);
    ASSERT_TRUE(e.answer);
    EXPECT_TRUE(e.answer->accepted);
    EXPECT_LT(mono_ns() - t0, 150'000'000) << "the silent client delayed another one";

    auto a = read_answer(silent);
    ::close(silent);
    ASSERT_TRUE(a) << a.error().message();
    EXPECT_EQ(a->code, Rejection::timeout);
    // The server closes its end right after answering, in its own thread.
    for (int i = 0; i < 100 && loop.open_connections != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(loop.open_connections, 0u);
}

TEST_F(ControlServerTest, too_many_connections_are_told_busy)
{
    auto o = options();
    o.max_connections = 2;
    o.deadline_ns = 2'000'000'000;
    auto server = ControlServer::open(o);
    ASSERT_TRUE(server);
    ServerLoop loop(**server);
    int a = connect_raw((*server)->path());
    int b = connect_raw((*server)->path());
    for (int i = 0; i < 100 && loop.open_connections < 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto e = ctl::exchange((*server)->path(), ControlRequest{}, 2000);
    ASSERT_TRUE(e.answer);
    EXPECT_FALSE(e.answer->accepted);
    EXPECT_EQ(e.answer->code, Rejection::busy);
    ::close(a);
    ::close(b);
}

TEST_F(ControlServerTest, replaces_a_stale_socket_and_refuses_a_live_one_or_a_file)
{
    auto o = options();
    {
        auto first = ControlServer::open(o);
        ASSERT_TRUE(first);
        // A second sampler for the same job while the first listens.
        auto second = ControlServer::open(o);
        ASSERT_FALSE(second);
        EXPECT_NE(second.error().message().find("already listens"), std::string::npos);
    }
    // A stale socket: bound, then its process gone (the fd closed, file kept).
    {
        int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        auto path = control_socket_path(o.dir, o.job_id);
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
        ::close(fd);
        auto server = ControlServer::open(o);
        ASSERT_TRUE(server) << server.error().message();
    }
    tree.write("run/colmet/job-1.ctl", "not a socket");
    auto server = ControlServer::open(o);
    ASSERT_FALSE(server);
    EXPECT_NE(server.error().message().find("not a socket"), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(tree.path("run/colmet/job-1.ctl")));
}

TEST_F(ControlServerTest, the_client_reports_a_missing_job_and_a_dead_sampler)
{
    auto e = ctl::exchange(tree.path("run/colmet/none.ctl"), ControlRequest{}, 500);
    ASSERT_TRUE(e.error);
    EXPECT_EQ(e.error->kind, ctl::Unreachable::no_socket);
    EXPECT_NE(e.error->message.find("no control socket"), std::string::npos);

    // Listening but never answering: a stopped sampler.
    tree.mkdir("run/colmet");
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    auto path = tree.path("run/colmet/stopped.ctl");
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 4), 0);
    auto t0 = mono_ns();
    e = ctl::exchange(path, ControlRequest{}, 300);
    EXPECT_LT(mono_ns() - t0, 1'000'000'000);
    ASSERT_TRUE(e.error);
    EXPECT_EQ(e.error->kind, ctl::Unreachable::timeout);
    ::close(fd);
    e = ctl::exchange(path, ControlRequest{}, 300);
    ASSERT_TRUE(e.error);
    EXPECT_EQ(e.error->kind, ctl::Unreachable::refused);
}

TEST_F(ControlServerTest, refuses_a_peer_that_is_neither_root_nor_the_owner)
{
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root to connect as another user";
    auto o = options();
    o.owner_uid = 64000;  // the job's user; the test connects as 64001
    auto server = ControlServer::open(o);
    ASSERT_TRUE(server) << server.error().message();
    auto path = (*server)->path();
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 64000u);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ServerLoop loop(**server);
    // The directories must be searchable by the other user.
    for (auto p = path.parent_path(); p != tree.root().parent_path(); p = p.parent_path())
        ::chmod(p.c_str(), 0755);

    auto as_user = [&](uid_t uid) {
        pid_t child = fork();
        if (child == 0) {
            if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
                _exit(90);
            auto e = ctl::exchange(path, ControlRequest{}, 2000);
            if (e.error)
                _exit(e.error->kind == ctl::Unreachable::permission ? 10 : 11);
            if (!e.answer->accepted && e.answer->code == Rejection::permission && !e.answer->state)
                _exit(20);
            _exit(e.answer->accepted ? 0 : 21);
        }
        int status = 0;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    // Mode 0600 keeps the other user out at connect().
    EXPECT_EQ(as_user(64001), 10);
    // With the mode opened up, SO_PEERCRED still refuses them.
    ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
    EXPECT_EQ(as_user(64001), 20);
    // The owner gets in.
    EXPECT_EQ(as_user(64000), 0);
    EXPECT_EQ(loop.handled, 1);
}

TEST_F(ControlServerTest, only_root_may_set_the_job_context)
{
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root to connect as the job's owner";
    auto o = options();
    o.owner_uid = 64000;
    auto server = ControlServer::open(o);
    ASSERT_TRUE(server) << server.error().message();
    auto path = (*server)->path();
    ServerLoop loop(**server);
    for (auto p = path.parent_path(); p != tree.root().parent_path(); p = p.parent_path())
        ::chmod(p.c_str(), 0755);
    ControlRequest request;
    request.context = {{"account", "physics"}};
    pid_t child = fork();
    if (child == 0) {
        if (setresgid(64000, 64000, 64000) != 0 || setresuid(64000, 64000, 64000) != 0)
            _exit(90);
        auto e = ctl::exchange(path, request, 2000);
        // Refused, with the state (the owner may see it) and nothing applied.
        if (!e.error && !e.answer->accepted && e.answer->code == Rejection::permission && e.answer->state &&
            e.answer->reason.find("only root may set the job's context") != std::string::npos)
            _exit(0);
        _exit(1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(loop.handled, 1);  // the state query of the refusal, not the request
    EXPECT_TRUE(loop.last.context.empty());
    auto e = ctl::exchange(path, request, 2000);
    ASSERT_FALSE(e.error);
    EXPECT_TRUE(e.answer->accepted);
    EXPECT_EQ(loop.last.context, request.context);
}
