// What a sink remembers about each host of a job, message after message:
// the host's delivery state (sequence, losses, start and end) and the few
// values the job's summary needs. Small on purpose (no samples), so it stays
// in memory while a job runs; the HDF5 sink stores it as host attributes and
// rebuilds it after a collector restart (sinks/hdf5/SummaryStore.hpp). No
// HDF5 here: the time-series sink, the flags and colmet-job use it too.
#pragma once

#include "collector/summary/JobSummary.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colmet::collector {

struct HostAggregate {
    static constexpr double k_unknown = JobSummary::k_unknown;

    std::string sender;
    // The highest seq stored of `sender` (attribute last_seq): after a
    // collector restart, the gap to the next message is the loss, and a
    // message at or below it is a duplicate.
    bool seq_known = false;
    uint64_t last_seq = 0;
    bool seen = false;  // first_ns/last_ns are set
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    bool started = false;  // a job_start arrived (at job_start_ns)
    int64_t job_start_ns = 0;
    bool ended = false;  // a job_end arrived (at job_end_ns)
    int64_t job_end_ns = 0;
    uint64_t samples_received = 0;
    uint64_t samples_lost = 0;
    // Rows of this host's messages that the collector received but could not
    // store (disk full, memory budget, write errors): one per backend block.
    uint64_t rows_dropped = 0;
    // Points of this host's messages that the time-series sink queued but
    // could not deliver (its queue full, the store refusing them, still
    // queued at the collector's stop): the file holds them, the store not.
    uint64_t tsdb_points_dropped = 0;
    double cpus = k_unknown;
    double period_s = 0;                    // the sampler's period, as its last message said
    int64_t last_received_ns = 0;           // when the collector got its last message (monotonic; 0: not since start)
    double memory_request_mib = k_unknown;  // meta host_memory_mib (the job's context)
    // Backend "gpu": the sum and count of its GPUs' utilisation samples
    // (gpuN_utilisation, 0..1), for the waste flags (collector/flags).
    double gpu_utilisation_sum = 0;
    uint64_t gpu_utilisation_n = 0;
    std::string cgroup_warning;  // meta cgroup_warning: a cgroup held none of the job's processes
    // Last non-missing values of cumulative metrics.
    double cpu_usage = k_unknown;
    double cpu_user = k_unknown;
    double cpu_system = k_unknown;
    double io_read_bytes = k_unknown;
    double io_write_bytes = k_unknown;
    double read_chars = k_unknown;
    double write_chars = k_unknown;
    // Maxima of gauges.
    double memory_peak = k_unknown;
    double memory_current = k_unknown;
    // Backend "rapl" (node scope): per metric, the last value and the energy
    // added since the first one (a value below the last one, a restarted
    // sampler, adds from 0).
    struct Energy {
        double last = k_unknown;
        double total = 0;
    };
    std::map<std::string, Energy, std::less<>> rapl;
    // Backend "energy" (the job's share of each RAPL domain): the same, per
    // domain metric.
    std::map<std::string, Energy, std::less<>> job_energy;
    // Other jobs that ran on this host at the same time (NodeSharing).
    std::set<std::string> overlapping_jobs;
    // Metadata not yet written to the file.
    std::vector<std::pair<std::string, std::string>> pending_meta;
    bool dirty = false;  // host attributes must be rewritten at the next flush
    // Acknowledged delivery (not stored): the sender asks for
    // acknowledgements, and one is due once what it sent is in the file.
    bool acked = false;
    bool ack_due = false;
};

using HostMap = std::map<std::string, HostAggregate>;  // by original host name

// How a message stands against what a host already holds of its sender:
// `duplicate` when its seq is not above the last one stored (a resend, a
// replay); else `gap`, the messages missing before it that the collector's
// core could not count because the sender was new to it (sender_new: the
// first message after a collector restart): from the last seq stored, or
// from 0 when nothing of the sender is stored.
struct SequenceCheck {
    bool duplicate = false;
    uint64_t gap = 0;
};
SequenceCheck check_sequence(const HostAggregate &host, const wire::Message &msg, bool sender_new);

// Acknowledged delivery: a sender that asks for acknowledgements resends
// what it has not seen acknowledged, in order, so its messages are stored
// in seq order and each once. The next one expected is last_seq + 1 (0 when
// nothing of the sender is stored). A message below that is a duplicate; a
// `base` above it means the sender gave up the messages in between: they are
// counted lost (given_up) and the host moves past them; a message beyond the
// one expected waits for the resend of those before it.
enum class Order { store, duplicate, wait };
struct OrderCheck {
    Order order = Order::store;
    uint64_t given_up = 0;
};
OrderCheck check_order(HostAggregate &host, const wire::Message &msg);

// Update a host with one message (lost = messages of the sender known lost).
void observe_message(HostAggregate &host, const wire::Message &msg, uint64_t lost);

// Update a host with one value of one metric (ignored unless the summary
// uses it; NaN is ignored).
void observe_value(HostAggregate &host, std::string_view backend, std::string_view metric, double value);

// True when the summary uses some metric of this backend.
bool summary_backend(std::string_view backend);

// The energy of one host over the job (J): the rapl package and dram
// domains summed ("*_package", "*_dram"), else psys; NaN without rapl data.
double host_energy_j(const HostAggregate &host);

// The summary of a job from its hosts.
JobSummary summarize(const std::string &job_id, const HostMap &hosts);

// What host_heap_bytes() counts for an element of a set, map or vector.
inline constexpr size_t k_set_entry_bytes = 64;

// Memory a host's aggregate holds beside its own size (names, overlaps,
// pending meta): an estimate for the sink's memory budget.
size_t host_heap_bytes(const HostAggregate &host);

// A positive number of a metadata value (cpus, host_memory_mib); NaN
// (unknown) for anything else.
double positive_or_unknown(const std::string &text);

}  // namespace colmet::collector
