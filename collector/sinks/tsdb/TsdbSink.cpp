#include "collector/sinks/tsdb/TsdbSink.hpp"

#include "common/clock.hpp"
#include "scheduler/JobContext.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace colmet::collector::tsdb {

namespace {

constexpr int64_t k_forget_job_ns = 3600LL * 1'000'000'000;  // a job's user is kept this long after its last message
constexpr size_t k_max_name_sets = 4096;

int64_t to_ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

}  // namespace

Result<std::unique_ptr<TsdbSink>> TsdbSink::make(TsdbOptions options)
{
    auto encoder = make_encoder(options.protocol);
    auto sender = HttpSender::start(options.http, encoder->headers());
    if (!sender)
        return sender.error().with_context("tsdb");
    return std::unique_ptr<TsdbSink>(new TsdbSink(std::move(options), std::move(encoder), std::move(*sender), nullptr));
}

std::unique_ptr<TsdbSink> TsdbSink::with_submit(TsdbOptions options, Submit submit)
{
    auto encoder = make_encoder(options.protocol);
    return std::unique_ptr<TsdbSink>(new TsdbSink(std::move(options), std::move(encoder), nullptr, std::move(submit)));
}

TsdbSink::TsdbSink(TsdbOptions options, std::unique_ptr<Encoder> encoder, std::unique_ptr<HttpSender> sender,
                   Submit submit)
    : m_options(std::move(options)), m_encoder(std::move(encoder)), m_sender(std::move(sender)),
      m_submit(std::move(submit)), m_host_cpus(m_encoder->prepare(SeriesName{"colmet_job", "host_cpus", {}}))
{
    set_loss_recorder(m_ledger.queue_counts());
}

TsdbSink::~TsdbSink() { close_all(); }

std::vector<PreparedSeries> &TsdbSink::names_of(const wire::BackendBlock &block)
{
    auto prepare_all = [&](std::vector<PreparedSeries> &names) -> std::vector<PreparedSeries> & {
        names.clear();
        names.reserve(block.metrics.size());
        for (const auto &m : block.metrics)
            names.push_back(m_encoder->prepare(series_name(block.name, m)));
        return names;
    };
    if (!block.metrics_wire)
        return prepare_all(m_scratch);
    auto it = m_names.find(block.metrics_wire);
    if (it != m_names.end() && it->second.size() == block.metrics.size())
        return it->second;
    if (m_names.size() >= k_max_name_sets)
        m_names.clear();
    return prepare_all(m_names[block.metrics_wire]);
}

void TsdbSink::consume(const wire::Message &msg, const Delivery &delivery) noexcept
{
    if (m_closed)
        return;
    try {
        // A resend is written again only when the ledger says its first
        // writing was dropped; it counts once in the job's summary.
        const bool again = delivery.resent;
        if (again && !m_ledger.wants_again(msg, delivery.received_mono_ns))
            return;
        m_now_ns = delivery.received_mono_ns;
        JobInfo &job = m_jobs[msg.job_id];
        job.seen_mono_ns = delivery.received_mono_ns;
        for (const auto &[key, value] : msg.meta) {
            if (key == "user" && !value.empty())
                job.user = value;
            else if (const auto *k = sched::find_context_key(key); k != nullptr && k->label)
                set_context_label(job, key, value);
        }
        HostAggregate &host = job.hosts[msg.host];
        if (!again)
            observe_message(host, msg, delivery.lost);
        host.last_received_ns = delivery.received_mono_ns;
        host.pending_meta.clear();
        const Labels job_labels{m_options.cluster, msg.host, msg.job_id, job.user, job.label_view};
        const Labels node_labels{m_options.cluster, msg.host, {}, {}};
        const size_t before = m_encoder->points();
        // The encoder's labels are set when the scope changes, not per point.
        bool labels_of_node = false;
        m_encoder->labels(job_labels);
        // The job's CPUs on this host (its job_start's "cpus"), with every
        // message: what a dashboard divides the CPU use by.
        if (std::isfinite(host.cpus))
            m_encoder->add(m_host_cpus, host.cpus, msg.time_ns);
        for (const auto &block : msg.backends) {
            const bool node_scope = block.scope == wire::Scope::node;
            if (node_scope) {
                // Every job on the node sends the node's values, read at
                // nearly the same aligned times: one reading per half period.
                const int64_t gap = static_cast<int64_t>(std::max(msg.period_s, 0.0) * 0.5e9);
                m_node_key.assign(msg.host).push_back('\0');
                m_node_key.append(block.name);
                auto it = m_node_times.find(m_node_key);
                if (again) {
                    // Its first writing was dropped: written whatever came since.
                } else if (it == m_node_times.end()) {
                    m_node_times.emplace(m_node_key, msg.time_ns);
                } else {
                    if (msg.time_ns <= it->second || msg.time_ns - it->second < gap)
                        continue;
                    it->second = msg.time_ns;
                }
            }
            if (node_scope != labels_of_node) {
                m_encoder->labels(node_scope ? node_labels : job_labels);
                labels_of_node = node_scope;
            }
            auto &names = names_of(block);
            const size_t n = std::min(names.size(), block.values.size());
            for (size_t i = 0; i < n; ++i)
                if (std::isfinite(block.values[i]))
                    m_encoder->add(names[i], block.values[i], msg.time_ns);
        }
        if (!again && msg.kind != wire::MessageKind::job_end) {
            flags::check_window(m_options.flag_rules, job.hosts, job.flags, msg.time_ns);
            if (job.flags.raised.size() > job.flags_sent)
                send_new_flags(msg.job_id, job);
        }
        if (!again && msg.kind == wire::MessageKind::job_end &&
            std::all_of(job.hosts.begin(), job.hosts.end(), [](const auto &h) { return h.second.ended; }))
            send_summary(msg.job_id, job);
        m_ledger.note(msg, m_encoder->points() - before, delivery.received_mono_ns);
        if (m_encoder->points() > before && m_batch_started_ns == 0)
            m_batch_started_ns = delivery.received_mono_ns;
        if (m_encoder->points() >= m_options.batch_points)
            send_batch();
    } catch (const std::exception &e) {
        spdlog::error("tsdb: job {}: {}", msg.job_id, e.what());
    }
}

void TsdbSink::set_context_label(JobInfo &job, const std::string &key, const std::string &value)
{
    auto &labels = job.context_labels;
    auto at = std::lower_bound(labels.begin(), labels.end(), key,
                               [](const auto &kv, const std::string &k) { return kv.first < k; });
    if (at != labels.end() && at->first == key) {
        if (at->second == value)
            return;
        at->second = value;
    } else {
        labels.emplace(at, key, value);
    }
    job.label_view.clear();
    for (const auto &[k, v] : labels)
        job.label_view.push_back({k, v});
}

void TsdbSink::send_new_flags(const std::string &job_id, JobInfo &job)
{
    std::vector<Label> context(job.label_view);
    m_encoder->labels({m_options.cluster, {}, job_id, job.user, context});
    for (; job.flags_sent < job.flags.raised.size(); ++job.flags_sent) {
        const auto &flag = job.flags.raised[job.flags_sent];
        m_encoder->add(SeriesName{"colmet_job", "flag", flag.name, "flag"}, 1, flag.since_ns);
    }
    job.flags.changed = false;
}

void TsdbSink::send_summary(const std::string &job_id, JobInfo &job)
{
    JobSummary summary = summarize(job_id, job.hosts);
    flags::check_end(m_options.flag_rules, job.hosts, summary, job.flags);
    if (job.flags.raised.size() > job.flags_sent)
        send_new_flags(job_id, job);
    summary.flags = job.flags.raised;
    add_summary({std::move(summary), job.user, job.context_labels});
    job.hosts.clear();  // a host that sends after this starts a new summary
}

void TsdbSink::add_summary(QueuedSummary summary)
{
    const JobSummary &s = summary.summary;
    std::vector<Label> context;
    for (const auto &[key, value] : summary.context_labels)
        context.push_back({key, value});
    m_encoder->labels({m_options.cluster, {}, s.job_id, summary.user, context});
    for (const auto &number : summary_numbers(s))
        if (std::isfinite(number.value))
            m_encoder->add(SeriesName{"colmet_job", number.metric, {}}, number.value, s.ended_ns);
    m_ledger.note_summary(std::move(summary));
}

void TsdbSink::send_batch()
{
    const size_t points = m_encoder->points();
    if (points == 0)
        return;
    const uint64_t id = m_ledger.seal();
    m_batch_started_ns = 0;
    if (m_sender) {
        m_sender->submit(m_encoder->take(), points, id);
    } else if (auto fate = m_submit(m_encoder->take(), points, id)) {
        settle(id, *fate);
    }
}

// Alone, a full queue keeps its oldest batches: they hold the senders'
// acknowledgements back, and the newer ones come again.
void TsdbSink::set_loss_recorder(bool present)
{
    m_ledger.set_queue_counts(present);
    if (m_sender)
        m_sender->keep_oldest(!present);
}

void TsdbSink::settle(uint64_t id, BatchFate fate)
{
    std::vector<QueuedSummary> again;
    m_ledger.settle(id, fate, again);
    if (again.empty())
        return;
    for (auto &summary : again)
        add_summary(std::move(summary));
    if (m_batch_started_ns == 0)
        m_batch_started_ns = m_now_ns;
}

void TsdbSink::settle_answers()
{
    if (m_sender)
        for (const BatchOutcome &o : m_sender->take_outcomes())
            settle(o.batch, o.fate);
}

void TsdbSink::tick(int64_t now_mono_ns) noexcept
{
    try {
        m_now_ns = now_mono_ns;
        settle_answers();
        const int64_t wall_now = realtime_ns();
        for (auto &[job_id, job] : m_jobs) {
            if (job.hosts.empty())
                continue;  // its summary is sent
            flags::check_silence(m_options.flag_rules, job.hosts, job.flags, now_mono_ns, wall_now);
            if (job.flags.raised.size() > job.flags_sent)
                send_new_flags(job_id, job);
        }
        if (m_encoder->points() > 0 && m_batch_started_ns == 0)
            m_batch_started_ns = now_mono_ns;
        if (m_batch_started_ns != 0 && now_mono_ns - m_batch_started_ns >= to_ns(m_options.batch_interval_s))
            send_batch();
        if (now_mono_ns - m_last_cleanup_ns > 60LL * 1'000'000'000) {
            m_last_cleanup_ns = now_mono_ns;
            std::erase_if(m_jobs,
                          [&](const auto &kv) { return now_mono_ns - kv.second.seen_mono_ns > k_forget_job_ns; });
            m_ledger.forget_idle(now_mono_ns, k_forget_job_ns);
            if (m_node_times.size() > 100000)
                m_node_times.clear();
        }
    } catch (const std::exception &e) {
        spdlog::error("tsdb: {}", e.what());
    }
}

void TsdbSink::flush_all(int64_t) noexcept
{
    try {
        send_batch();
    } catch (const std::exception &e) {
        spdlog::error("tsdb: {}", e.what());
    }
}

void TsdbSink::close_all() noexcept
{
    if (m_closed)
        return;
    m_closed = true;
    try {
        send_batch();
    } catch (const std::exception &e) {
        spdlog::error("tsdb: {}", e.what());
    }
    if (m_sender) {
        m_sender->stop(std::chrono::milliseconds(static_cast<int64_t>(m_options.stop_grace_s * 1000)));
        try {
            settle_answers();  // what the stop dropped: losses to record, or never acknowledged
        } catch (const std::exception &e) {
            spdlog::error("tsdb: {}", e.what());
        }
    }
}

SenderStats TsdbSink::stats() const
{
    SenderStats s = m_sender ? m_sender->stats() : SenderStats{};
    s.queued_points += m_encoder->points();
    return s;
}

std::string TsdbSink::stats_text() const
{
    const SenderStats s = stats();
    return "tsdb: " + std::to_string(s.points_sent) + " points sent, " + std::to_string(s.queued_points) + " queued, " +
           std::to_string(s.points_dropped) + " dropped, " + std::to_string(s.points_rejected) + " rejected; " +
           std::to_string(s.requests) + " requests, " + std::to_string(s.retries) + " retried";
}

}  // namespace colmet::collector::tsdb
