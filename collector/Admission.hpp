// The collector's admission checks: a message that decoded is still refused
// when it claims what no colmet-node does, or when it goes beyond a cap that
// keeps one host or one job from taking the collector over. Refused messages
// never reach the sinks and leave no trace in the state below.
//
//   1. Time: `t` more than max_clock_skew_s ahead of the collector's
//      CLOCK_REALTIME, or more than max_clock_skew_s + max_message_delay_s
//      behind it (a sampler's outbox and its node spool keep messages while
//      the collector is away; colmet-job flush-spool drops what is older
//      than a day, the default here).
//   2. Sequence: per sender, seq advance plus `dropped` beyond what could
//      have been produced since its previous message: sequence_slack +
//      2 x elapsed x (1/period + 1/0.1 s), the period being the one stated
//      (at least 0.1 s; 0.1 s when not stated) and 1/0.1 s the extra
//      samples `sample_now` may add. elapsed is the larger of the time since
//      the sender's previous message arrived and the advance of its `t` (a
//      backlog queued during an outage arrives at once). A sender heard for
//      the first time has nothing to compare seq with: only its `dropped` is
//      checked, as if its previous message had come forget_after_s ago.
//   3. A job_start from a sender already running (heard, no job_end yet).
//   4. Caps on (job, host) pairs: hosts per job, open jobs per host (heard
//      within forget_after_s, no job_end), new jobs per host per minute
//      (a burst of that many, then that many per minute). Per host, not per
//      sender: a sender is one sampler process, the host is what one node
//      (or one user forging messages) controls. During the collector's first
//      forget_after_s, jobs that reappear with a sample (already running
//      when the collector restarted) do not count as new.
//
// The state is bounded: senders and (job, host) pairs not heard from for
// max(forget_after_s, 2 periods) are forgotten (a forgotten sender's next
// message counts as its first; a forgotten pair's, as a new job): those
// whose last stated period is at most forget_after_s / 2 after
// forget_after_s, the others after twice the longest period (3,600 s). Each
// of these two classes holds at most max_tracked senders and as many
// pairs, the least recently heard going first. 0 in max_clock_skew_s, max_hosts_per_job,
// max_jobs_per_host or max_new_jobs_per_minute turns that check off.
#pragma once

#include "collector/RetentionTable.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace colmet::collector {

struct AdmissionLimits {
    double max_clock_skew_s = 600;       // 0: no time check
    double max_message_delay_s = 86400;  // how much further behind `t` may be (a node spool's age)
    uint32_t max_hosts_per_job = 4096;
    uint32_t max_jobs_per_host = 256;       // open jobs
    uint32_t max_new_jobs_per_minute = 60;  // per host
    double forget_after_s = 300;            // the HDF5 sink's default --idle-close
    size_t max_tracked = 100000;            // senders, and (job, host) pairs
    uint64_t sequence_slack = 1000;
};

enum class Refusal : uint8_t { clock, sequence, job_restart, hosts_per_job, jobs_per_host, new_jobs };

struct Refused {
    Refusal reason;
    std::string why;  // for the log: names the job, host and sender
};

class Admission {
public:
    explicit Admission(AdmissionLimits limits = {});

    // A decoded message received at now_mono_ns (CLOCK_MONOTONIC) when the
    // collector's clock read now_real_ns (CLOCK_REALTIME). Nothing: admitted
    // and remembered; else why it is refused (and nothing is remembered).
    std::optional<Refused> admit(const wire::Message &msg, int64_t now_mono_ns, int64_t now_real_ns);

    const AdmissionLimits &limits() const { return m_limits; }
    size_t senders() const { return m_senders.size(); }
    size_t pairs() const { return m_pairs.size(); }
    size_t hosts() const { return m_hosts.size(); }
    size_t jobs() const { return m_jobs.size(); }

private:
    struct SenderState {
        uint64_t seq;     // highest heard
        int64_t time_ns;  // latest `t` heard
        double period_s;  // as last stated
        bool ended;       // job_end heard
    };
    struct PairState {
        bool open;
    };
    struct HostState {
        uint32_t pairs = 0;     // tracked (job, host) pairs
        uint32_t open = 0;      // of which open
        double tokens = 0;      // new jobs it may start now
        int64_t tokens_ns = 0;  // when tokens was last refilled
    };
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    template <typename V>
    using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;
    using Senders = RetentionTable<SenderState>;
    using Pairs = RetentionTable<PairState>;

    std::optional<Refused> check_clock(const wire::Message &msg, int64_t now_real_ns) const;
    std::optional<Refused> check_sender(const wire::Message &msg, Senders::Ref sender, int64_t now_mono_ns);
    std::optional<Refused> check_pair(const wire::Message &msg, Pairs::Ref pair, int64_t now_mono_ns);
    // A sampler whose period is over half of forget_after_s: its state is
    // kept for 2 x the longest period (RetentionTable's long class).
    bool slow(const wire::Message &msg) const;
    bool spends_token(const wire::Message &msg, int64_t now_mono_ns) const;
    void remember(const wire::Message &msg, Senders::Ref sender, Pairs::Ref pair, int64_t now_mono_ns);
    double allowance(double elapsed_s, double period_a, double period_b) const;
    void refill(HostState &host, int64_t now_mono_ns) const;
    void forget_pair(Pairs::Entry &pair);
    void expire(int64_t now_mono_ns);

    AdmissionLimits m_limits;
    int64_t m_forget_ns;
    Senders m_senders;
    Pairs m_pairs;                      // key: job '\0' host (names never hold a NUL)
    StringMap<HostState> m_hosts;       // hosts with a tracked pair
    StringMap<uint32_t> m_jobs;         // tracked pairs per job
    std::string m_key;                  // reused for pair keys
    std::optional<int64_t> m_first_ns;  // first message admitted or refused
};

}  // namespace colmet::collector
