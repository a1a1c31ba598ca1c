// sample() is the hot path: once warmed up it must not allocate, also when
// it reports a failure. Counts calls to the global operator new.
#include "BackendTestSupport.hpp"
#include "node/backends/registry.hpp"

#include "AllocationCounter.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace colmet;

namespace {

using test::allocations_in_samples;

void write_process(const test::FakeTree &tree, int pid)
{
    std::string p = std::to_string(pid);
    tree.write("proc/" + p + "/stat", p + " (w) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 77 0 0\n");
    tree.write("proc/" + p + "/io", "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                                    "cancelled_write_bytes: 7\n");
}

}  // namespace

TEST(AllocationTest, the_counter_counts)
{
    volatile size_t n = 100;
    test::start_counting_allocations();
    std::vector<int> v(n);
    EXPECT_EQ(test::stop_counting_allocations(), 1u);
    EXPECT_EQ(v.size(), 100u);
}

TEST(AllocationTest, steady_state_samples_do_not_allocate)
{
    for (const char *layout : {"v1", "v2"}) {
        test::FakeTree tree;
        tree.copy_fixture(std::string("backends/") + layout, "cg");
        for (int pid : {100, 101, 102})
            write_process(tree, pid);
        std::string procs_dir = layout == std::string("v1") ? "cg/pids/job" : "cg/job";
        tree.write(procs_dir + "/cgroup.procs", "100\n101\n102\n");
        tree.write(procs_dir + "/step_0/cgroup.procs", "");
        auto paths = layout == std::string("v1")
                         ? test::v1_paths(tree.path("cg"), {"cpuacct", "cpu", "memory", "blkio", "pids"})
                         : test::v2_paths(tree.path("cg/job"));
        auto ctx = test::context(paths, tree.path("proc"));
        for (const auto &factory : node::job_backends()) {
            auto backend = factory.make_for_job(ctx);
            ASSERT_TRUE(backend) << backend.error().message();
            std::vector<double> values((*backend)->metrics().size());
            EXPECT_EQ(allocations_in_samples(**backend, values), 0u) << layout << " " << factory.name;
            EXPECT_EQ((*backend)->status(), "") << layout << " " << factory.name;
        }
    }
}

TEST(AllocationTest, reporting_a_missing_file_does_not_allocate)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v1", "cg");
    std::filesystem::remove(tree.path("cg/memory/job/memory.stat"));
    std::filesystem::remove(tree.path("cg/cpu/job/cpu.stat"));
    auto ctx = test::context(test::v1_paths(tree.path("cg"), {"cpuacct", "cpu", "memory"}));
    for (const auto &factory : {node::job_backends()[0], node::job_backends()[1]}) {
        auto backend = factory.make_for_job(ctx);
        ASSERT_TRUE(backend) << backend.error().message();
        std::vector<double> values((*backend)->metrics().size());
        EXPECT_EQ(allocations_in_samples(**backend, values), 0u) << factory.name;
        EXPECT_NE((*backend)->status(), "") << factory.name;
    }
}
