// Each waste flag's rule (collector/flags/WasteFlags.hpp) on hosts'
// aggregates as the sinks keep them: what trips it, what does not, and that
// a raised flag keeps its first text and time.
#include "collector/flags/WasteFlags.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace colmet::collector;
using namespace colmet::collector::flags;

namespace {

constexpr int64_t k_s = 1'000'000'000;
constexpr int64_t k_t0 = 1'800'000'000 * k_s;

HostAggregate host(double cpus, double cpu_s, double period_s = 1)
{
    HostAggregate h;
    h.seen = true;
    h.started = true;
    h.first_ns = h.last_ns = k_t0;
    h.cpus = cpus;
    h.cpu_usage = cpu_s;
    h.period_s = period_s;
    return h;
}

FlagRules rules()
{
    FlagRules r;
    r.window_s = 10;
    r.cpu_efficiency = 0.25;
    r.memory_fraction = 0.25;
    r.memory_min_mib = 1024;
    r.gpu_utilisation = 0.1;
    r.silence_s = 30;
    return r;
}

// Two windows of 10 s on two hosts of 2 CPUs each: `busy` CPU-seconds per
// second over the job.
FlagState run_windows(double busy)
{
    HostMap hosts{{"a", host(2, 0)}, {"b", host(2, 0)}};
    FlagState state;
    for (int s = 0; s <= 20; ++s) {
        for (auto &[name, h] : hosts)
            h.cpu_usage = busy / 2 * s;
        check_window(rules(), hosts, state, k_t0 + s * k_s);
    }
    return state;
}

}  // namespace

TEST(WasteFlagsTest, low_cpu_efficiency_over_a_window)
{
    // 0.8 of 4 CPUs busy: 20 %, below 25 %; raised at the first window's end.
    FlagState idle = run_windows(0.8);
    ASSERT_EQ(idle.raised.size(), 1U);
    EXPECT_EQ(idle.raised[0].name, k_low_cpu);
    EXPECT_EQ(idle.raised[0].text, "CPU efficiency 20.0 % over 10 s (below 25.0 %)");
    EXPECT_EQ(idle.raised[0].since_ns, k_t0 + 10 * k_s);
    EXPECT_TRUE(idle.changed);
    // 1.2 of 4: 30 %, kept.
    EXPECT_TRUE(run_windows(1.2).raised.empty());
    // Off: nothing.
    FlagRules off = rules();
    off.cpu_efficiency = 0;
    HostMap hosts{{"a", host(2, 0)}};
    FlagState state;
    check_window(off, hosts, state, k_t0);
    check_window(off, hosts, state, k_t0 + 20 * k_s);
    EXPECT_TRUE(state.raised.empty());
}

TEST(WasteFlagsTest, a_window_judges_only_its_own_time)
{
    // Idle for the first 10 s, then busy: flagged for the first window
    // only; a job busy first and idle later is flagged at the second.
    HostMap hosts{{"a", host(1, 0)}};
    FlagState state;
    check_window(rules(), hosts, state, k_t0);
    hosts["a"].cpu_usage = 9;  // 90 % of 1 CPU
    check_window(rules(), hosts, state, k_t0 + 10 * k_s);
    EXPECT_TRUE(state.raised.empty());
    hosts["a"].cpu_usage = 10;  // then 10 %
    check_window(rules(), hosts, state, k_t0 + 20 * k_s);
    ASSERT_EQ(state.raised.size(), 1U);
    EXPECT_EQ(state.raised[0].text, "CPU efficiency 10.0 % over 10 s (below 25.0 %)");
    // Raised once: a later window keeps the first text.
    check_window(rules(), hosts, state, k_t0 + 30 * k_s);
    ASSERT_EQ(state.raised.size(), 1U);
    EXPECT_EQ(state.raised[0].since_ns, k_t0 + 20 * k_s);
}

TEST(WasteFlagsTest, unknown_cpus_judge_nothing)
{
    HostMap hosts{{"a", host(NAN, 0)}};
    FlagState state;
    check_window(rules(), hosts, state, k_t0);
    check_window(rules(), hosts, state, k_t0 + 20 * k_s);
    EXPECT_TRUE(state.raised.empty());
}

TEST(WasteFlagsTest, gpu_idle_over_a_window_and_the_whole_job)
{
    HostMap hosts{{"a", host(1, 0)}};
    hosts["a"].cpu_usage = 0;
    FlagRules r = rules();
    r.cpu_efficiency = 0;
    FlagState state;
    check_window(r, hosts, state, k_t0);
    hosts["a"].gpu_utilisation_sum = 0.5;  // 10 samples at 5 %
    hosts["a"].gpu_utilisation_n = 10;
    check_window(r, hosts, state, k_t0 + 10 * k_s);
    ASSERT_EQ(state.raised.size(), 1U);
    EXPECT_EQ(state.raised[0].name, k_gpu_idle);
    EXPECT_EQ(state.raised[0].text, "GPU utilisation 5.0 % on average over 10 s (below 10.0 %)");
    // A busy GPU, and a job without GPUs: nothing.
    FlagState busy;
    hosts["a"].gpu_utilisation_sum = 0;
    hosts["a"].gpu_utilisation_n = 0;
    check_window(r, hosts, busy, k_t0);
    hosts["a"].gpu_utilisation_sum = 9;
    hosts["a"].gpu_utilisation_n = 10;
    check_window(r, hosts, busy, k_t0 + 10 * k_s);
    JobSummary summary;
    summary.duration_s = 20;
    check_end(r, hosts, summary, busy);
    EXPECT_TRUE(busy.raised.empty());
    // At the end: the whole job's mean.
    FlagState end;
    hosts["a"].gpu_utilisation_sum = 0.2;
    check_end(r, hosts, summary, end);
    ASSERT_EQ(end.raised.size(), 1U);
    EXPECT_EQ(end.raised[0].text, "GPU utilisation 2.0 % on average over the whole job (below 10.0 %)");
}

TEST(WasteFlagsTest, memory_unused_against_each_hosts_request)
{
    HostMap hosts{{"a", host(1, 1)}, {"b", host(1, 1)}};
    hosts["a"].memory_request_mib = 8192;
    hosts["a"].memory_peak = 4096.0 * 1048576;  // half: kept
    hosts["b"].memory_request_mib = 8192;
    hosts["b"].memory_peak = 1024.0 * 1048576;  // an eighth: flagged
    JobSummary summary;
    summary.ended_ns = k_t0;
    FlagState state;
    check_end(rules(), hosts, summary, state);
    ASSERT_EQ(state.raised.size(), 1U);
    EXPECT_EQ(state.raised[0].name, k_memory_unused);
    EXPECT_EQ(state.raised[0].text, "host b used at most 1024 MiB of the 8192 MiB asked for (12.5 %, below 25.0 %)");
    EXPECT_EQ(state.raised[0].since_ns, k_t0);
    // Small requests, unknown requests and unknown peaks are not judged.
    hosts["b"].memory_request_mib = 512;
    FlagState small;
    check_end(rules(), hosts, summary, small);
    EXPECT_TRUE(small.raised.empty());
    hosts["b"].memory_request_mib = NAN;
    hosts["a"].memory_peak = NAN;
    check_end(rules(), hosts, summary, small);
    EXPECT_TRUE(small.raised.empty());
}

TEST(WasteFlagsTest, the_whole_jobs_cpu_efficiency_at_its_end)
{
    HostMap hosts{{"a", host(4, 1)}};
    JobSummary summary;
    summary.cpu_efficiency = 0.1;
    summary.duration_s = 5;  // shorter than a window: not judged
    FlagState state;
    check_end(rules(), hosts, summary, state);
    EXPECT_TRUE(state.raised.empty());
    summary.duration_s = 60;
    check_end(rules(), hosts, summary, state);
    ASSERT_EQ(state.raised.size(), 1U);
    EXPECT_EQ(state.raised[0].text, "CPU efficiency 10.0 % over the whole job (60 s, below 25.0 %)");
}

TEST(WasteFlagsTest, stopped_sending_after_the_silence_and_three_periods)
{
    // Received at 1000 s and 1100 s of the collector's clock.
    HostMap hosts{{"a", host(1, 1, 20)}, {"b", host(1, 1, 1)}, {"c", host(1, 1, 1)}};
    hosts["a"].last_received_ns = 1000 * k_s;
    hosts["b"].last_received_ns = 1100 * k_s;
    hosts["c"].last_received_ns = 0;  // restored from the file: not heard from since the start
    FlagState state;
    // a: silent 50 s, but its period is 20 s: 60 s needed.
    check_silence(rules(), hosts, state, 1050 * k_s, k_t0);
    EXPECT_TRUE(state.raised.empty());
    check_silence(rules(), hosts, state, 1060 * k_s, k_t0);
    ASSERT_EQ(state.raised.size(), 1U);
    EXPECT_EQ(state.raised[0].name, k_stopped_sending);
    EXPECT_EQ(state.raised[0].text, "host a sent nothing for 60 s before its job end (limit 60 s)");
    EXPECT_EQ(state.raised[0].since_ns, k_t0);
    // An ended host is never silent.
    hosts["a"].ended = true;
    FlagState ended;
    check_silence(rules(), hosts, ended, 1120 * k_s, k_t0);
    EXPECT_TRUE(ended.raised.empty());
    // The summary written after the job's silence, without every job end.
    JobSummary summary;
    summary.hosts = 2;
    summary.hosts_without_job_end = 1;
    check_unended(rules(), summary, 300, ended);
    ASSERT_EQ(ended.raised.size(), 1U);
    EXPECT_EQ(ended.raised[0].text, "no job end from 1 of its 2 hosts after 300 s of silence");
    summary.hosts_without_job_end = 0;
    FlagState complete;
    check_unended(rules(), summary, 300, complete);
    EXPECT_TRUE(complete.raised.empty());
}
