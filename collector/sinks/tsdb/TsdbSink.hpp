// The time-series sink of colmet-collector: every value of every valid
// message as a point in a time-series store (VictoriaMetrics, Prometheus,
// Thanos, Mimir, InfluxDB), beside or instead of the HDF5 files.
//
// Points are named as Naming.hpp says, labelled job_id, user, host and
// cluster, and the job's context labels when its metadata has them
// (account, partition, queue: scheduler/JobContext.hpp)
// (node-scope backends: host and cluster only, and one reading per
// host every half period, whichever job's sampler sent it first, however
// many jobs share the node), stamped with the
// sample's own time (milliseconds for remote write, nanoseconds for
// InfluxDB), and carry the very number the HDF5 file holds. A missing value
// (NaN) is not sent at all: the series has no point at that time, as in
// the HDF5 file, rather than a zero or a stale marker.
//
// With every message goes colmet_job_host_cpus, the job's CPUs on the host
// (its job_start's "cpus"), what dashboards divide the CPU use by.
// When every host of a job has sent its job_end, the job's summary (the
// HDF5 file's /summary, computed the same way) follows as one point per
// field: colmet_job_<field>{job_id, user, cluster} at the job's end.
//
// consume() only encodes into the current batch; a batch goes to the
// HttpSender (its own thread, a bounded queue) when it holds batch_points
// points or is batch_interval_s old. What becomes of each batch is booked
// (BatchLedger.hpp): beside the HDF5 sink, points count as accepted once
// queued, and a batch dropped later becomes losses recorded in the jobs'
// files; alone, the sink acknowledges a sender only once the store holds
// its points, and writes again what a dropped batch held when the sender
// resends it. Not thread-safe: one thread calls it.
#pragma once

#include "collector/Sink.hpp"
#include "collector/flags/WasteFlags.hpp"
#include "collector/sinks/tsdb/BatchLedger.hpp"
#include "collector/sinks/tsdb/Encoder.hpp"
#include "collector/sinks/tsdb/HttpSender.hpp"
#include "collector/summary/HostAggregate.hpp"
#include "common/result.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace colmet::collector::tsdb {

struct TsdbOptions {
    Protocol protocol = Protocol::remote_write;
    HttpOptions http;
    std::string cluster;          // the cluster label (empty: none)
    flags::FlagRules flag_rules;  // the waste flags, sent as colmet_job_flag{flag="..."} points
    size_t batch_points = 10000;  // a batch is sent when it holds this many points...
    double batch_interval_s = 1;  // ...or is this old
    double stop_grace_s = 5;      // at close_all, how long queued batches may still take
};

class TsdbSink final : public Sink {
public:
    // Starts the sender (reads the credential files).
    static Result<std::unique_ptr<TsdbSink>> make(TsdbOptions options);
    // Without a sender: every batch goes to `submit` (tests, benchmarks),
    // which says what became of it, or nullopt to say it later (settle()).
    using Submit = std::function<std::optional<BatchFate>(std::string body, uint64_t points, uint64_t batch)>;
    static std::unique_ptr<TsdbSink> with_submit(TsdbOptions options, Submit submit);
    ~TsdbSink() override;

    void consume(const wire::Message &msg, const Delivery &delivery) noexcept override;
    void tick(int64_t now_mono_ns) noexcept override;
    void flush_all(int64_t now_mono_ns) noexcept override;
    void close_all() noexcept override;

    bool acknowledges() const override { return !m_ledger.queue_counts(); }
    void take_acks(std::vector<wire::Ack> &out) override { m_ledger.take_acks(out); }
    void set_loss_recorder(bool present) override;
    void take_losses(std::vector<SinkLoss> &out) override { m_ledger.take_losses(out); }

    // What became of batch `id` (tick() calls it for the sender's answers).
    void settle(uint64_t id, BatchFate fate);

    SenderStats stats() const;
    std::string stats_text() const override;

private:
    TsdbSink(TsdbOptions options, std::unique_ptr<Encoder> encoder, std::unique_ptr<HttpSender> sender, Submit submit);
    std::vector<PreparedSeries> &names_of(const wire::BackendBlock &block);
    void send_batch();

    struct JobInfo {
        std::string user;
        // The job's context labels (scheduler/JobContext.hpp), sorted by
        // key, from its metadata; `label_view` points into them.
        std::vector<std::pair<std::string, std::string>> context_labels;
        std::vector<Label> label_view;
        flags::FlagState flags;  // the job's waste flags (as the HDF5 sink raises them)
        size_t flags_sent = 0;   // of flags.raised, those already written as points
        int64_t seen_mono_ns = 0;
        HostMap hosts;  // what the summary needs, as the HDF5 sink keeps it
    };
    static void set_context_label(JobInfo &job, const std::string &key, const std::string &value);
    // colmet_job_flag{flag="<name>"} 1 at its time for each flag raised
    // since the last call (labels: the job's, without host).
    void send_new_flags(const std::string &job_id, JobInfo &job);
    void send_summary(const std::string &job_id, JobInfo &job);
    void add_summary(QueuedSummary summary);
    void settle_answers();

    TsdbOptions m_options;
    std::unique_ptr<Encoder> m_encoder;
    std::unique_ptr<HttpSender> m_sender;  // null with with_submit()
    Submit m_submit;
    BatchLedger m_ledger;
    int64_t m_batch_started_ns = 0;  // CLOCK_MONOTONIC of the first point of the batch (0: empty)
    int64_t m_now_ns = 0;
    std::unordered_map<std::string, JobInfo> m_jobs;        // the user of each job heard of
    std::unordered_map<std::string, int64_t> m_node_times;  // "host\0backend": last time written
    std::string m_node_key;                                 // its key, made without allocating
    // Series names, prepared for the encoder, by descriptor bytes (decoded
    // messages share them); the key's shared_ptr keeps the bytes, so an
    // address is never reused.
    std::map<std::shared_ptr<const std::string>, std::vector<PreparedSeries>> m_names;
    std::vector<PreparedSeries> m_scratch;  // names of a block built in memory
    PreparedSeries m_host_cpus;             // colmet_job_host_cpus
    int64_t m_last_cleanup_ns = 0;
    bool m_closed = false;
};

}  // namespace colmet::collector::tsdb
