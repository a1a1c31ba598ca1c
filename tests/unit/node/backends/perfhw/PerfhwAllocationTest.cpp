// PerfhwBackend::sample() is the hot path: once warmed up it must not
// allocate, also when it reports unsupported events or released counters.
// Counts calls to the global operator new (root only: real perf events).
#include "RealJob.hpp"

#include "node/backends/perfhw/PerfhwBackend.hpp"

#include "AllocationCounter.hpp"

#include <gtest/gtest.h>

#include <linux/perf_event.h>

using namespace colmet;
using namespace colmet::node::backends::perfhw;
using namespace colmet::perf;

namespace {

using test::allocations_in_samples;

}  // namespace

TEST(PerfhwAllocationTest, sample_does_not_allocate)
{
    if (auto why = test::live_skip_reason(); !why.empty())
        GTEST_SKIP() << why;
    test::RealJob job("alloc");
    ASSERT_TRUE(job.create());
    ASSERT_TRUE(job.spawn_burner(100));
    auto made = make_perfhw_backend(job.context(),
                                    {test::task_clock(), test::hardware_event("cpu_cycles", PERF_COUNT_HW_CPU_CYCLES),
                                     test::software_event("page_faults", PERF_COUNT_SW_PAGE_FAULTS)},
                                    test::k_cgroup_root, "/sys");
    ASSERT_TRUE(made) << made.error().message();
    auto &b = dynamic_cast<PerfhwBackend &>(**made);
    std::vector<double> values(b.metrics().size());
    job.go();
    EXPECT_EQ(allocations_in_samples(b, values), 0u);
    b.release();
    EXPECT_EQ(allocations_in_samples(b, values), 0u) << "released counters";
    ASSERT_TRUE(b.reopen());
    EXPECT_EQ(allocations_in_samples(b, values), 0u) << "after reopen()";
}
