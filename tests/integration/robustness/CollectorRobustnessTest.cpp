// At least 10,000 random, truncated and hostile messages sent to a running
// colmet-collector, then one valid job: the collector stays up, stores the
// valid job, writes nothing outside its output directory, and counts every
// reject.
#include "MsgpackBuilder.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "common/clock.hpp"
#include "wire/codec.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
namespace mp = colmet::test::mp;
using namespace colmet;

namespace {

int free_port()
{
    zmq::context_t ctx;
    zmq::socket_t s(ctx, zmq::socket_type::pull);
    s.bind("tcp://127.0.0.1:*");
    std::string endpoint = s.get(zmq::sockopt::last_endpoint);
    return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

pid_t start_collector(const fs::path &out, const std::string &uri, const fs::path &log)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = std::freopen(log.c_str(), "w", stderr);
        (void)f;
        std::string bin = std::string(COLMET_BIN_DIR) + "/colmet-collector";
        execl(bin.c_str(), bin.c_str(), "--config", "/dev/null", "--allow-root", "--zeromq-bind-uri", uri.c_str(),
              "--hdf5-dir", out.c_str(), "-v", static_cast<char *>(nullptr));
        _exit(127);
    }
    return pid;
}

wire::Message valid_message(const std::string &job, wire::MessageKind kind, uint64_t seq)
{
    wire::Message m;
    m.kind = kind;
    m.host = "robust-host";
    m.job_id = job;
    m.sender = "sender-" + job;
    m.seq = seq;
    // Recent times: the collector refuses times far from its clock. Seqs go
    // up to 10,000: 0.1 s apart (the shortest period), up to now.
    static const int64_t base_ns = realtime_ns() - 1'000'000'000'000;
    m.time_ns = base_ns + static_cast<int64_t>(seq) * 100'000'000;
    wire::BackendBlock cpu;
    cpu.name = "cgroup_cpu";
    cpu.metrics = {{"usage", "s", wire::MetricKind::counter}};
    cpu.values = {static_cast<double>(seq)};
    m.backends = {cpu};
    if (kind == wire::MessageKind::job_start)
        m.meta = {{"user", "robust"}, {"cpus", "1"}};
    return m;
}

std::string encoded(const wire::Message &m)
{
    std::string bytes;
    EXPECT_TRUE(wire::encode(m, bytes));
    return bytes;
}

// Messages the decoder must refuse, built without the encoder's checks.
std::vector<std::string> hostile_messages()
{
    std::vector<std::string> out;
    auto with = [](const std::string &key, const std::string &value) {
        return mp::map(mp::replace(mp::valid_message_entries(), key, value));
    };
    for (const char *job : {"../../etc/x", "/etc/passwd", "a/b", "job\nnewline", "", "\x01\x02"})
        out.push_back(with("job", mp::str(job)));
    out.push_back(with("job", mp::str(std::string(4000, 'j'))));
    out.push_back(with("host", mp::str("../../../tmp/evil")));
    out.push_back(with("v", mp::uint(99)));
    out.push_back(with("t", mp::str("yesterday")));
    out.push_back(with("backends", mp::uint(3)));
    out.push_back(std::string("\xdd\xff\xff\xff\xff", 5));
    out.push_back(std::string("\xdf\x7f\xff\xff\xff", 5));
    out.push_back(std::string("\xc6\x7f\xff\xff\xff", 5));
    out.push_back(mp::map({}));
    return out;
}

struct CollectorLog {
    uint64_t received = 0, stored = 0, rejected = 0;
};

CollectorLog parse_final_stats(const fs::path &log)
{
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    std::smatch m;
    std::string s = text.str();
    std::regex re("stopped: received (\\d+), stored (\\d+), rejected (\\d+)");
    CollectorLog r;
    if (std::regex_search(s, m, re)) {
        r.received = std::stoull(m[1]);
        r.stored = std::stoull(m[2]);
        r.rejected = std::stoull(m[3]);
    }
    return r;
}

}  // namespace

TEST(CollectorRobustness, survives_ten_thousand_hostile_messages_and_stores_the_valid_job)
{
    test::FakeTree tree;
    fs::path out = tree.path("out");
    fs::path log = tree.path("collector.log");
    std::string uri = "tcp://127.0.0.1:" + std::to_string(free_port());
    pid_t collector = start_collector(out, uri, log);
    ASSERT_GT(collector, 0);

    zmq::context_t ctx;
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, -1);
    push.connect(uri);
    zmq::socket_t oversized(ctx, zmq::socket_type::push);
    oversized.set(zmq::sockopt::linger, 0);
    oversized.connect(uri);

    std::mt19937_64 rng(20261202);
    std::string valid = encoded(valid_message("fuzzed", wire::MessageKind::sample, 1));
    auto hostile = hostile_messages();
    uint64_t frames_sent = 0, messages_sent = 0, certainly_invalid = 0;
    auto send = [&](const std::string &bytes, bool more = false) {
        push.send(zmq::buffer(bytes), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
        ++frames_sent;
    };
    for (int i = 0; i < 10'000; ++i) {
        ++messages_sent;
        switch (i % 6) {
        case 0: {  // random bytes
            std::string b(rng() % 600, '\0');
            for (auto &c : b)
                c = static_cast<char>(rng());
            if (b.empty() || (static_cast<unsigned char>(b[0]) & 0xf0) != 0x80)
                ++certainly_invalid;  // not even a fixmap at the root
            send(b);
            break;
        }
        case 1:  // truncated valid message
            send(valid.substr(0, rng() % valid.size()));
            ++certainly_invalid;
            break;
        case 2: {  // a valid message with a few bytes flipped
            std::string b = valid;
            for (int k = 0; k < 3; ++k)
                b[rng() % b.size()] = static_cast<char>(rng());
            send(b);
            break;
        }
        case 3:  // hostile fields
            send(hostile[static_cast<size_t>(i / 6) % hostile.size()]);
            ++certainly_invalid;
            break;
        case 4:                                        // valid bytes with trailing garbage
            send(valid + std::string("\x00\x01", 2));  // a literal "\x00\x01" would append nothing
            ++certainly_invalid;
            break;
        case 5:
            if (i % 600 == 5) {  // a frame over the size limit, on a connection of its own
                // ZeroMQ drops the connection that announces it (ZMQ_MAXMSGSIZE):
                // the frame never reaches the collector's code.
                oversized.send(zmq::buffer(std::string(wire::k_max_message_bytes + 1 + (rng() % 1000), '\x90')),
                               zmq::send_flags::dontwait);
                --messages_sent;
                continue;
            } else if (i % 60 == 5) {  // a multi-frame message
                send(valid, true);
                send(valid);
            } else {  // a valid message for a weird but legal job id
                send(encoded(valid_message("..", wire::MessageKind::sample, static_cast<uint64_t>(i))));
                continue;
            }
            ++certainly_invalid;
            break;
        }
    }
    // Then one valid job.
    const std::string job = "robust-ok";
    send(encoded(valid_message(job, wire::MessageKind::job_start, 0)));
    for (uint64_t s = 1; s <= 3; ++s)
        send(encoded(valid_message(job, wire::MessageKind::sample, s)));
    send(encoded(valid_message(job, wire::MessageKind::job_end, 4)));
    messages_sent += 5;

    // Give the collector time to drain, then check it is still alive.
    fs::path data_file = job_file(out, job, JobFile::data);
    for (int i = 0; i < 100 && !fs::exists(data_file); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(waitpid(collector, nullptr, WNOHANG), 0) << "the collector died";
    kill(collector, SIGTERM);
    int status = 0;
    ASSERT_EQ(waitpid(collector, &status, 0), collector);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

    // The valid job is stored with its summary.
    auto summary = collector::read_job_summary(data_file);
    ASSERT_TRUE(summary) << summary.error().message();
    EXPECT_EQ(summary->samples_received, 5u);
    EXPECT_DOUBLE_EQ(summary->cpu_time_s, 4.0);

    // Nothing outside the output directory: the tree holds only out/ and the log.
    for (const auto &entry : fs::directory_iterator(tree.root()))
        EXPECT_TRUE(entry.path() == out || entry.path() == log) << "unexpected " << entry.path();
    for (const auto &entry : fs::recursive_directory_iterator(out)) {
        EXPECT_TRUE(entry.is_regular_file()) << entry.path();
        EXPECT_EQ(entry.path().parent_path(), out) << entry.path();
    }
    EXPECT_FALSE(fs::exists("/etc/x.h5"));
    EXPECT_FALSE(fs::exists("/tmp/evil.h5"));

    // Every frame was counted; every message that cannot be valid was rejected.
    auto stats = parse_final_stats(log);
    EXPECT_EQ(stats.received, frames_sent);
    EXPECT_GE(stats.rejected, certainly_invalid);
    EXPECT_LE(stats.rejected, messages_sent);
    EXPECT_GE(stats.stored, 5u);
    std::cout << "sent " << messages_sent << " messages in " << frames_sent << " frames; collector stored "
              << stats.stored << " and rejected " << stats.rejected << " (at least " << certainly_invalid
              << " had to be)\n";
}
