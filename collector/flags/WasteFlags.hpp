// Waste flags: rules the collector evaluates for every job, while it runs
// and at its end, from the numbers its summary is made of (the hosts'
// aggregates): CPUs left idle for a whole window, memory asked for and not
// used, GPUs left idle, a host that stopped sending. A raised flag stays
// raised (its first text and time); the sinks store it (/flags of the HDF5
// file, colmet_job_flag points) and on-job-end gets it. Pure: no I/O.
#pragma once

#include "collector/summary/HostAggregate.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::collector::flags {

// The thresholds, from colmet.conf [collector] flag-* (0 turns a rule off).
struct FlagRules {
    double cpu_efficiency = 0.25;   // low_cpu_efficiency below this over a window, or the whole job
    double window_s = 3600;         // the window of the running rules; the whole job must be this long
    double memory_fraction = 0.25;  // memory_unused: a host's peak below this fraction of its request
    double memory_min_mib = 4096;   // ... when it asked for at least this much
    double gpu_utilisation = 0.10;  // gpu_idle: mean GPU utilisation below this over a window, or the job
    double silence_s = 600;         // stopped_sending: a host silent this long (at least 3 of its periods)
};

// The flags' names, in the order they are shown.
inline constexpr std::string_view k_low_cpu = "low_cpu_efficiency";
inline constexpr std::string_view k_memory_unused = "memory_unused";
inline constexpr std::string_view k_gpu_idle = "gpu_idle";
inline constexpr std::string_view k_stopped_sending = "stopped_sending";
inline constexpr std::string_view k_flag_names[] = {k_low_cpu, k_memory_unused, k_gpu_idle, k_stopped_sending};

// name: one of k_flag_names; since_ns: the message time (window, end) or
// the collector's clock (silence) when it was raised.
using Flag = JobFlag;

// What a job's rules remember between messages.
struct FlagState {
    bool window_open = false;
    int64_t window_start_ns = 0;  // message time the window began
    double window_cpu_s = 0;      // the hosts' CPU time then
    double window_gpu_sum = 0;    // the hosts' GPU utilisation sums and counts then
    uint64_t window_gpu_n = 0;
    std::vector<Flag> raised;
    bool changed = false;  // raised since the sink last stored them
};

// True when the state holds a flag of this name.
bool has_flag(const FlagState &state, std::string_view name);

// After each message of a running job (time: the message's): closes the
// window when it is window_s long and raises low_cpu_efficiency or gpu_idle
// for it. Cheap until then.
void check_window(const FlagRules &rules, const HostMap &hosts, FlagState &state, int64_t now_ns);

// On the collector's tick: stopped_sending for a host that has not ended
// and from which the collector received nothing for max(silence_s, 3
// periods) (now_mono_ns and last_received_ns: the collector's monotonic
// clock, so that a late message, from a node spool, does not count as a
// silence; a host not heard from since the collector started is left to
// check_unended). Raised with the time of the epoch clock (wall_now_ns).
void check_silence(const FlagRules &rules, const HostMap &hosts, FlagState &state, int64_t now_mono_ns,
                   int64_t wall_now_ns);

// When the job's summary is written: the whole job's CPU efficiency and its
// GPUs' mean utilisation (when the job lasted window_s), each host's memory
// against its request (meta host_memory_mib).
void check_end(const FlagRules &rules, const HostMap &hosts, const JobSummary &summary, FlagState &state);

// When the summary is written after the job's silence (silent_s) without
// every host's job end: stopped_sending, unless raised already.
void check_unended(const FlagRules &rules, const JobSummary &summary, double silent_s, FlagState &state);

}  // namespace colmet::collector::flags
