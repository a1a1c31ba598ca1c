// Sampler::run end to end in one process: the real loop with its control
// socket and the legacy ZeroMQ endpoint. A legacy configure message and a
// colmet-ctl request change the period of the running loop, a silent
// control client does not hold it, and SIGTERM still ends it.
#include "ctl/CtlClient.hpp"
#include "node/Sampler.hpp"
#include "node/control/ControlServer.hpp"
#include "node/control/LegacyControl.hpp"

#include "FakeTree.hpp"
#include "MsgpackBuilder.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

using namespace colmet;
using namespace colmet::node;
using namespace colmet::node::control;
namespace mp = colmet::test::mp;

namespace {

using Clock = std::chrono::steady_clock;

// Records when each message was queued.
class RecordingTransport : public Transport {
public:
    explicit RecordingTransport(std::vector<Clock::time_point> &times, std::mutex &mutex)
        : m_times(times), m_mutex(mutex)
    {
    }
    bool send(std::string_view) noexcept override
    {
        std::lock_guard lock(m_mutex);
        m_times.push_back(Clock::now());
        return true;
    }

private:
    std::vector<Clock::time_point> &m_times;
    std::mutex &m_mutex;
};

class OneMetric : public MetricBackend {
public:
    std::string_view name() const override { return "fake"; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override { values[0] = 1; }

private:
    std::vector<wire::MetricDescriptor> m_metrics{{"one", "1", wire::MetricKind::gauge}};
};

}  // namespace

TEST(SamplerRunTest, the_running_loop_obeys_control_requests_and_still_ends_on_sigterm)
{
    // SIGTERM must stay pending for the loop's signalfd, in every thread.
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, &old), 0);

    test::FakeTree tree;
    std::vector<Clock::time_point> times;
    std::mutex mutex;
    SamplerConfig c;
    c.job_id = "run-1";
    c.host = "h";
    c.period_s = 5;
    std::vector<std::unique_ptr<MetricBackend>> backends;
    backends.push_back(std::make_unique<OneMetric>());
    Sampler sampler(c, std::move(backends), std::make_unique<RecordingTransport>(times, mutex));

    ControlServerOptions so;
    so.dir = tree.path("run");
    so.job_id = "run-1";
    so.owner_uid = ::geteuid();
    auto server = ControlServer::open(so);
    ASSERT_TRUE(server) << server.error().message();
    auto socket_path = (*server)->path();
    sampler.set_control_server(std::move(*server));
    std::unique_ptr<LegacyControl> legacy;
    int port = 47700;
    for (; port < 47800 && !legacy; ++port)
        if (auto b = LegacyControl::bind("tcp://127.0.0.1:" + std::to_string(port)))
            legacy = std::move(*b);
    ASSERT_TRUE(legacy);
    --port;
    sampler.set_legacy_control(std::move(legacy));

    std::atomic<int> ended_by{-1};
    std::thread loop([&] { ended_by = sampler.run(); });

    // A silent client holds a connection open the whole time.
    int silent = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
    for (int i = 0; i < 100 && ::connect(silent, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));

    // The original tool's configure message sets a 0.2 s period...
    zmq::context_t ctx;
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 0);
    push.connect("tcp://127.0.0.1:" + std::to_string(port));
    push.send(zmq::buffer(std::string("junk first")), zmq::send_flags::none);
    push.send(zmq::buffer(mp::map({{"sample_period", mp::str("0.2")}})), zmq::send_flags::none);
    double period = 0;
    for (int i = 0; i < 100 && period != 0.2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        auto e = ctl::exchange(socket_path, ControlRequest{}, 1000);
        ASSERT_TRUE(e.answer) << e.error->message;
        period = e.answer->state->period_s;
    }
    ASSERT_EQ(period, 0.2);
    auto changed_at = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));

    // ... colmet-ctl another one, through the same loop.
    ControlRequest r;
    r.job_id = "run-1";
    r.period_s = 0.1;
    auto e = ctl::exchange(socket_path, r, 1000);
    ASSERT_TRUE(e.answer) << e.error->message;
    EXPECT_TRUE(e.answer->accepted);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));

    ::kill(::getpid(), SIGTERM);
    loop.join();
    ::close(silent);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    EXPECT_EQ(ended_by, SIGTERM);

    // job_start, then samples every 0.2 s after the change (none lost to the
    // silent client), then 0.1 s, then job_end.
    std::lock_guard lock(mutex);
    size_t after = 0;
    Clock::time_point prev{};
    double worst_gap = 0;
    for (auto t : times) {
        if (t <= changed_at)
            continue;
        if (after > 0)
            worst_gap = std::max(worst_gap, std::chrono::duration<double>(t - prev).count());
        prev = t;
        ++after;
    }
    EXPECT_GE(after, 7u) << "samples after the legacy change";
    EXPECT_LT(worst_gap, 0.5) << "a control client held the loop";
}
