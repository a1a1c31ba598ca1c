// Series names of the time-series sink (collector/sinks/tsdb/Naming.hpp).
#include "collector/sinks/tsdb/Naming.hpp"

#include <gtest/gtest.h>

namespace colmet::collector::tsdb {
namespace {

using wire::MetricKind;

std::string full(const std::string &backend, const std::string &name, const std::string &unit, MetricKind kind)
{
    return series_name(backend, {name, unit, kind}).full();
}

TEST(NamingTest, follows_prometheus_conventions)
{
    EXPECT_EQ(full("cgroup_cpu", "usage", "s", MetricKind::counter), "colmet_cgroup_cpu_usage_seconds_total");
    EXPECT_EQ(full("cgroup_memory", "current", "B", MetricKind::gauge), "colmet_cgroup_memory_current_bytes");
    EXPECT_EQ(full("cgroup_cpu", "nr_periods", "1", MetricKind::counter), "colmet_cgroup_cpu_nr_periods_total");
    EXPECT_EQ(full("rapl", "package_0", "J", MetricKind::counter), "colmet_rapl_package_0_joules_total");
    EXPECT_EQ(full("temperature", "cpu_0", "degC", MetricKind::gauge), "colmet_temperature_cpu_0_celsius");
    EXPECT_EQ(full("processes", "threads", "1", MetricKind::gauge), "colmet_processes_threads");
    // A unit or _total already in the metric's name is not repeated.
    EXPECT_EQ(full("x", "wait_seconds", "s", MetricKind::gauge), "colmet_x_wait_seconds");
    EXPECT_EQ(full("x", "packets_total", "1", MetricKind::counter), "colmet_x_packets_total");
    // Another unit as it is, sanitised.
    EXPECT_EQ(full("infiniband", "rcv", "Pkt/s", MetricKind::gauge), "colmet_infiniband_rcv_pkt_s");
}

TEST(NamingTest, perfhw_events_are_a_label)
{
    auto n = series_name("perfhw", {"instructions", "1", MetricKind::counter});
    EXPECT_EQ(n.full(), "colmet_perfhw_count_total");
    EXPECT_EQ(n.event, "instructions");
    n = series_name("perfhw", {"task_clock", "s", MetricKind::counter});
    EXPECT_EQ(n.full(), "colmet_perfhw_seconds_total");
    EXPECT_EQ(n.event, "task_clock");
    n = series_name("perfhw", {"instructions.scaling", "1", MetricKind::gauge});
    EXPECT_EQ(n.full(), "colmet_perfhw_scaling_ratio");
    EXPECT_EQ(n.event, "instructions");
    n = series_name("perfhw", {"cpu/event=0x3c/", "1", MetricKind::counter});
    EXPECT_EQ(n.event, "cpu/event=0x3c/") << "the label keeps the event's own name";
}

TEST(NamingTest, gpu_indices_are_a_label)
{
    auto n = series_name("gpu", {"gpu3_utilisation", "1", MetricKind::gauge});
    EXPECT_EQ(n.full(), "colmet_gpu_utilisation");
    EXPECT_EQ(n.event, "3");
    EXPECT_EQ(n.event_label, "gpu");
    n = series_name("gpu", {"gpu12_job_energy", "J", MetricKind::counter});
    EXPECT_EQ(n.full(), "colmet_gpu_job_energy_joules_total");
    EXPECT_EQ(n.event, "12");
    n = series_name("gpu", {"gpux_power", "W", MetricKind::gauge});
    EXPECT_EQ(n.full(), "colmet_gpu_gpux_power_watts") << "not gpu<index>_: a plain name";
    EXPECT_EQ(n.event, "");
    EXPECT_EQ(series_name("perfhw", {"instructions", "1", MetricKind::counter}).event_label, "event");
}

TEST(NamingTest, names_are_only_safe_characters)
{
    const auto n = series_name("Bad-Backend", {"a.b c/d", "µs", MetricKind::gauge});
    for (char c : n.full())
        EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << n.full();
}

}  // namespace
}  // namespace colmet::collector::tsdb
