#include "node/backends/processes/ProcessesBackend.hpp"
#include "BackendTestSupport.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

using namespace colmet;
using namespace colmet::node::backends;
using colmet::test::value;

namespace {

// A fake /proc under <tree>/proc and a v1 pids hierarchy under <tree>/cg.
class FakeJob {
public:
    FakeJob() { procs({}); }

    void procs(std::initializer_list<int> pids, std::string_view rel = "cg/pids/job") const
    {
        std::string text;
        for (int pid : pids)
            text += std::to_string(pid) + "\n";
        tree.write(std::string(rel) + "/cgroup.procs", text);
    }

    void process(int pid, int ppid, uint64_t start, uint64_t threads, uint64_t rchar, uint64_t wchar = 0,
                 std::string_view comm = "worker") const
    {
        std::string dir = "proc/" + std::to_string(pid);
        tree.write(dir + "/stat", std::to_string(pid) + " (" + std::string(comm) + ") S " + std::to_string(ppid) +
                                      " 1 1 0 -1 4194304 100 0 0 0 10 5 0 0 20 0 " + std::to_string(threads) + " 0 " +
                                      std::to_string(start) + " 3133440 384 18446744073709551615\n");
        tree.write(dir + "/io", "rchar: " + std::to_string(rchar) + "\nwchar: " + std::to_string(wchar) +
                                    "\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\nwrite_bytes: 8192\n"
                                    "cancelled_write_bytes: 0\n");
    }

    void exit(int pid) const { std::filesystem::remove_all(tree.path("proc/" + std::to_string(pid))); }

    std::unique_ptr<node::MetricBackend> backend() const
    {
        auto b = make_processes_backend(
            test::context(test::v1_paths(tree.path("cg"), {"pids", "memory"}), tree.path("proc")));
        if (!b) {
            ADD_FAILURE() << b.error().message();
            return nullptr;
        }
        return std::move(*b);
    }

    test::FakeTree tree;
};

}  // namespace

TEST(ProcessesBackendTest, describes_its_metrics)
{
    using wire::MetricKind;
    std::vector<wire::MetricDescriptor> expected = {
        {"processes", "1", MetricKind::gauge},
        {"threads", "1", MetricKind::gauge},
        {"read_chars", "B", MetricKind::counter},
        {"write_chars", "B", MetricKind::counter},
        {"read_syscalls", "1", MetricKind::counter},
        {"write_syscalls", "1", MetricKind::counter},
        {"read_bytes", "B", MetricKind::counter},
        {"write_bytes", "B", MetricKind::counter},
        {"cancelled_write_bytes", "B", MetricKind::counter},
    };
    EXPECT_EQ(processes_metrics(), expected);
}

TEST(ProcessesBackendTest, counts_processes_threads_and_io)
{
    FakeJob job;
    job.process(100, 1, 5000, 4, 1000, 10, "my ) (prog");
    job.process(101, 1, 5001, 1, 500, 20);
    job.procs({101, 100});
    auto b = job.backend();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->name(), "processes");
    auto v = test::sample(*b);
    EXPECT_EQ(b->status(), "");
    EXPECT_DOUBLE_EQ(value(*b, v, "processes"), 2);
    EXPECT_DOUBLE_EQ(value(*b, v, "threads"), 5);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1500);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_chars"), 30);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_syscalls"), 6);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_syscalls"), 8);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_bytes"), 8192);
    EXPECT_DOUBLE_EQ(value(*b, v, "write_bytes"), 16384);
    EXPECT_DOUBLE_EQ(value(*b, v, "cancelled_write_bytes"), 0);
}

TEST(ProcessesBackendTest, exited_process_with_parent_outside_the_job_stays_in_the_total)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.process(101, 1, 5001, 1, 500);
    job.procs({100, 101});
    auto b = job.backend();
    ASSERT_TRUE(b);
    test::sample(*b);
    job.exit(101);
    job.procs({100});
    job.process(100, 1, 5000, 1, 1100);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "processes"), 1);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1600);
    EXPECT_EQ(b->status(), "");
}

TEST(ProcessesBackendTest, child_reaped_by_a_parent_in_the_job_is_not_double_counted)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.process(200, 100, 6000, 1, 300);
    job.procs({100, 200});
    auto b = job.backend();
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1300);
    // The child exits; the parent has not reaped it yet.
    job.exit(200);
    job.procs({100});
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1300);  // monotonic, not 1000
    // The parent reaps it: the kernel adds the child's 300 to the parent.
    job.process(100, 1, 5000, 1, 1350);
    v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1350);
}

TEST(ProcessesBackendTest, reused_pid_is_a_new_process)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.process(101, 1, 5001, 1, 500);
    job.procs({100, 101});
    auto b = job.backend();
    ASSERT_TRUE(b);
    test::sample(*b);
    job.process(101, 1, 7777, 2, 40);  // 101 exited, a new process got pid 101
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "processes"), 2);
    EXPECT_DOUBLE_EQ(value(*b, v, "threads"), 3);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1540);
}

TEST(ProcessesBackendTest, process_gone_between_cgroup_procs_and_proc_is_skipped)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.procs({100, 555});  // 555 has no /proc entry
    auto b = job.backend();
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "processes"), 1);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1000);
    EXPECT_EQ(b->status(), "");
    EXPECT_EQ(b->failed_samples(), 0u);
}

TEST(ProcessesBackendTest, unreadable_io_gives_nan_io_and_a_status)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.process(101, 1, 5001, 1, 500);
    job.procs({100, 101});
    auto b = job.backend();
    ASSERT_TRUE(b);
    test::sample(*b);
    // A read error on /proc/101/io (EACCES for another user's process when
    // not root; a directory gives EISDIR even as root).
    std::filesystem::remove(job.tree.path("proc/101/io"));
    job.tree.mkdir("proc/101/io");
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "processes"), 2);
    EXPECT_TRUE(std::isnan(value(*b, v, "read_chars")));
    EXPECT_TRUE(std::isnan(value(*b, v, "cancelled_write_bytes")));
    EXPECT_NE(b->status().find("pid 101 io: "), std::string_view::npos);
}

TEST(ProcessesBackendTest, includes_nested_cgroups)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.process(300, 100, 6000, 8, 10);
    job.procs({100});
    job.procs({300}, "cg/pids/job/step_0/task_0");
    auto b = job.backend();
    ASSERT_TRUE(b);
    auto v = test::sample(*b);
    EXPECT_DOUBLE_EQ(value(*b, v, "processes"), 2);
    EXPECT_DOUBLE_EQ(value(*b, v, "threads"), 9);
    EXPECT_DOUBLE_EQ(value(*b, v, "read_chars"), 1010);
}

TEST(ProcessesBackendTest, removed_cgroup_gives_nan_and_status)
{
    FakeJob job;
    job.process(100, 1, 5000, 1, 1000);
    job.procs({100});
    auto b = job.backend();
    ASSERT_TRUE(b);
    std::filesystem::remove(job.tree.path("cg/pids/job/cgroup.procs"));
    auto v = test::sample(*b);
    EXPECT_TRUE(std::isnan(value(*b, v, "processes")));
    EXPECT_EQ(b->status(), "cgroup.procs: No such file or directory");
}

TEST(ProcessesBackendTest, factory_failures)
{
    FakeJob job;
    auto none = make_processes_backend(test::context(test::v1_paths(job.tree.path("cg"), {"devices"})));
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code(), Errc::unsupported);
    auto no_dir = make_processes_backend(test::context(test::v1_paths(job.tree.path("cg"), {"cpuacct"})));
    ASSERT_FALSE(no_dir);
    EXPECT_EQ(no_dir.error().code(), Errc::not_found);
    auto no_proc =
        make_processes_backend(test::context(test::v1_paths(job.tree.path("cg"), {"pids"}), job.tree.path("no-proc")));
    ASSERT_FALSE(no_proc);
    EXPECT_NE(no_proc.error().message().find("no-proc"), std::string::npos);
}

TEST(ProcessesBackendTest, v2_uses_the_unified_directory)
{
    FakeJob job;
    job.process(100, 1, 5000, 3, 1000);
    job.procs({100}, "v2/job");
    auto b = make_processes_backend(test::context(test::v2_paths(job.tree.path("v2/job")), job.tree.path("proc")));
    ASSERT_TRUE(b);
    auto v = test::sample(**b);
    EXPECT_DOUBLE_EQ(value(**b, v, "threads"), 3);
}

TEST(ProcessesBackendTest, io_of_another_users_process_is_permission_denied)
{
    if (test::is_root())
        GTEST_SKIP() << "root may read every /proc/<pid>/io";
    FakeJob job;
    job.procs({1});  // init: owned by root
    auto b = make_processes_backend(test::context(test::v1_paths(job.tree.path("cg"), {"pids"})));
    ASSERT_TRUE(b) << b.error().message();
    auto v = test::sample(**b);
    EXPECT_DOUBLE_EQ(value(**b, v, "processes"), 1);
    EXPECT_TRUE(std::isnan(value(**b, v, "read_chars")));
    EXPECT_EQ((*b)->status(), "pid 1 io: Permission denied");
}
