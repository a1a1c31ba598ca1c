// A collector killed with SIGKILL mid-job leaves a file that holds every row
// of the last flush, and a new collector process appends to it.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <sys/wait.h>
#include <unistd.h>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

constexpr int k_batch = 100;
const std::string k_job = "crash.1";

// Sample i has seq i (the job_start 0, the job_end 301).
Message sample(int i)
{
    Message m = message(MessageKind::sample, k_job, "h", k_t0 + i * k_second,
                        {cpu_block(i, 0.5 * i, 0.25 * i), memory_block(1000.0 + i, i % 3 == 0 ? k_nan : 5000.0 + i)});
    m.seq = static_cast<uint64_t>(i);
    return m;
}

// Run body in a child process; returns its wait status.
int in_child(const std::function<void()> &body)
{
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        try {
            body();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "child: %s\n", e.what());
            _exit(2);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

TEST(Hdf5CrashTest, sigkill_keeps_flushed_rows_and_a_new_process_appends)
{
    test::FakeTree tree;
    auto o = options(tree.path("out"));
    o.batch_rows = k_batch;

    // 250 samples: rows 1..200 are flushed in two batches, 50 wait in memory
    // when the process dies.
    int status = in_child([&] {
        auto sink = make_sink(o);
        Message start = job_start(k_job, "h", k_t0, "8");
        start.seq = 0;
        sink->consume(start, at(1));
        for (int i = 1; i <= 250; ++i)
            sink->consume(sample(i), at(1 + i));
        if (sink->stats().rows_written != uint64_t{2} * 200 || sink->stats().write_errors != 0)
            _exit(3);
        raise(SIGKILL);
    });
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

    auto file = job_file(tree.path("out"), k_job, JobFile::data);
    {
        Reader r(file);
        ASSERT_TRUE(r.ok()) << "the HDF5 C API opens a file its writer never closed";
        auto time = r.time("/hosts/h/cgroup_cpu/segment_0");
        ASSERT_EQ(time.size(), 200u);
        size_t cols = 0;
        auto mem = r.values("/hosts/h/cgroup_memory/segment_0", &cols);
        ASSERT_EQ(mem.size(), 400u);
        for (int i = 1; i <= 200; ++i) {
            auto row = static_cast<size_t>(i - 1);
            ASSERT_EQ(time[row], k_t0 + i * k_second);
            ASSERT_EQ(mem[row * 2], 1000.0 + i);
            ASSERT_TRUE(same(mem[row * 2 + 1], i % 3 == 0 ? k_nan : 5000.0 + i));
        }
        EXPECT_EQ(r.string("/hosts/h", "user"), "alice") << "meta written at the first flush";
        EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 201);  // job_start + 200 samples
        EXPECT_EQ(r.i64("/hosts/h", "last_seq"), 200) << "the seq of the last row written";
    }

    // The collector restarts in a new process; the samplers send from 251
    // (a new collector core: the sender is new to it).
    status = in_child([&] {
        auto sink = make_sink(o);
        for (int i = 251; i <= 300; ++i) {
            collector::Delivery d = at(1000 + i);
            d.sender_new = i == 251;
            sink->consume(sample(i), d);
        }
        Message end = message(MessageKind::job_end, k_job, "h", k_t0 + 301 * k_second, {cpu_block(301, 0, 0)});
        end.seq = 301;
        sink->consume(end, at(2000));
        auto stats = sink->stats();
        if (stats.write_errors != 0 || stats.files_quarantined != 0 || sink->open_files() != 0)
            _exit(4);
    });
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

    Reader r(file);
    auto time = r.time("/hosts/h/cgroup_cpu/segment_0");
    ASSERT_EQ(time.size(), 200u + 50 + 1) << "appended to the same segment";
    EXPECT_EQ(time[199], k_t0 + 200 * k_second);
    EXPECT_EQ(time[200], k_t0 + 251 * k_second) << "rows 201..250 died in memory";
    EXPECT_FALSE(r.exists("/hosts/h/cgroup_cpu/segment_1"));
    EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 252);
    EXPECT_EQ(r.i64("/hosts/h", "samples_lost"), 50) << "201..250: the gap after the file's last_seq, 200";
    r.close();
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 301);
    EXPECT_DOUBLE_EQ(s->cpus, 8);
    EXPECT_DOUBLE_EQ(s->duration_s, 301);
}

}  // namespace
