// libpfm4 names through resolve_event(). Only what libpfm4 knows on every
// machine is tested (its "perf" software events); hardware PMU names depend
// on the CPU libpfm4 detects.
#include "perf/PerfEventSpec.hpp"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

using namespace colmet;
using namespace colmet::perf;

TEST(LibpfmEventsTest, perf_task_clock_resolves_to_the_software_task_clock)
{
    if (!have_libpfm())
        GTEST_SKIP() << "built without libpfm4 (COLMET_HAVE_LIBPFM unset)";
    auto r = resolve_event("perf::TASK-CLOCK", "/nonexistent");
    if (!r)
        GTEST_SKIP() << "libpfm4 does not resolve perf::TASK-CLOCK here: " << r.error().message();
    EXPECT_EQ(r->name, "perf::TASK-CLOCK");
    EXPECT_EQ(r->type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
    EXPECT_EQ(r->config, static_cast<uint64_t>(PERF_COUNT_SW_TASK_CLOCK));
    EXPECT_EQ(r->unit, "s");  // nanoseconds reported as seconds, like task_clock
    EXPECT_DOUBLE_EQ(r->scale, 1e-9);
}

TEST(LibpfmEventsTest, perf_instructions_resolves_to_the_hardware_event)
{
    if (!have_libpfm())
        GTEST_SKIP() << "built without libpfm4 (COLMET_HAVE_LIBPFM unset)";
    auto r = resolve_event("perf::INSTRUCTIONS", "/nonexistent");
    if (!r)
        GTEST_SKIP() << "libpfm4 does not resolve perf::INSTRUCTIONS here: " << r.error().message();
    EXPECT_EQ(r->type, static_cast<uint32_t>(PERF_TYPE_HARDWARE));
    EXPECT_EQ(r->config, static_cast<uint64_t>(PERF_COUNT_HW_INSTRUCTIONS));
    EXPECT_EQ(r->unit, "1");
}

TEST(LibpfmEventsTest, privilege_modifiers_are_refused)
{
    if (!have_libpfm())
        GTEST_SKIP() << "built without libpfm4 (COLMET_HAVE_LIBPFM unset)";
    if (!resolve_event("perf::TASK-CLOCK", "/nonexistent"))
        GTEST_SKIP() << "libpfm4 does not know perf::TASK-CLOCK here";
    auto r = resolve_event("perf::TASK-CLOCK:u", "/nonexistent");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    EXPECT_NE(r.error().message().find("(:u, :k) are not supported"), std::string::npos) << r.error().message();
}

TEST(LibpfmEventsTest, unknown_name_falls_through_to_the_generic_error)
{
    // INST_RETIRED:ANY_P is unknown unless libpfm4 detects an Intel core PMU.
    auto r = resolve_event("NO_SUCH_EVENT:ANY", "/nonexistent");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    EXPECT_EQ(r.error().message().rfind("unknown perf event 'NO_SUCH_EVENT:ANY'", 0), 0u) << r.error().message();
}
