#include "collector/Admission.hpp"

#include "common/period.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace colmet::collector {
namespace {

int64_t to_ns(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

// How long a slow sampler's state is kept: two of the longest periods.
int64_t slow_retention_ns(int64_t forget_ns) { return std::max(forget_ns, to_ns(2 * k_max_period_s)); }

// Forgetting a sender leaves nothing else to update.
constexpr auto k_forget_sender = [](auto &) {};

double effective_period(double period_s) { return period_s >= k_min_period_s ? period_s : k_min_period_s; }

uint64_t saturating_add(uint64_t a, uint64_t b)
{
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

std::string number(double v, int decimals = 0)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// The start of every refusal's log line: names are printable ASCII (the decoder checked).
std::string whose(const wire::Message &m)
{
    return "job " + m.job_id + " host " + m.host + " sender " + m.sender + ": ";
}

}  // namespace

Admission::Admission(AdmissionLimits limits)
    : m_limits(limits), m_forget_ns(to_ns(limits.forget_after_s)),
      m_senders(limits.max_tracked, m_forget_ns, slow_retention_ns(m_forget_ns)),
      m_pairs(limits.max_tracked, m_forget_ns, slow_retention_ns(m_forget_ns))
{
}

bool Admission::slow(const wire::Message &msg) const
{
    return 2 * effective_period(msg.period_s) > m_limits.forget_after_s;
}

std::optional<Refused> Admission::admit(const wire::Message &msg, int64_t now_mono_ns, int64_t now_real_ns)
{
    if (!m_first_ns)
        m_first_ns = now_mono_ns;
    expire(now_mono_ns);
    if (auto refused = check_clock(msg, now_real_ns))
        return refused;
    auto sender = m_senders.find(msg.sender);
    if (auto refused = check_sender(msg, sender, now_mono_ns))
        return refused;
    m_key.assign(msg.job_id);
    m_key.push_back('\0');
    m_key.append(msg.host);
    auto pair = m_pairs.find(m_key);
    if (auto refused = check_pair(msg, pair, now_mono_ns))
        return refused;
    remember(msg, sender, pair, now_mono_ns);
    return std::nullopt;
}

std::optional<Refused> Admission::check_clock(const wire::Message &msg, int64_t now_real_ns) const
{
    const double skew = m_limits.max_clock_skew_s;
    if (skew <= 0)
        return std::nullopt;
    const double ahead_s = (static_cast<double>(msg.time_ns) - static_cast<double>(now_real_ns)) / 1e9;
    if (ahead_s > skew)
        return Refused{Refusal::clock, whose(msg) + "time " + number(ahead_s) +
                                           " s ahead of the collector's clock (limit " + number(skew) + " s)"};
    const double behind_limit = skew + std::max(m_limits.max_message_delay_s, 0.0);
    if (-ahead_s > behind_limit)
        return Refused{Refusal::clock, whose(msg) + "time " + number(-ahead_s) +
                                           " s behind the collector's clock (limit " + number(behind_limit) + " s)"};
    return std::nullopt;
}

double Admission::allowance(double elapsed_s, double period_a, double period_b) const
{
    // What a sampler can produce: its periodic samples plus one on demand
    // per 0.1 s at most; twice that, plus the slack.
    const double period = std::min(effective_period(period_a), effective_period(period_b));
    const double rate = 1 / period + 1 / k_min_period_s;
    return static_cast<double>(m_limits.sequence_slack) + 2 * rate * std::max(elapsed_s, 0.0);
}

std::optional<Refused> Admission::check_sender(const wire::Message &msg, Senders::Ref sender, int64_t now_mono_ns)
{
    if (!sender) {
        // Nothing to compare seq with; dropped as if the previous message
        // had come when the sender would have been forgotten.
        const double allowed = allowance(m_limits.forget_after_s, msg.period_s, msg.period_s);
        if (static_cast<double>(msg.dropped) > allowed)
            return Refused{Refusal::sequence, whose(msg) + "first message heard reports " +
                                                  std::to_string(msg.dropped) + " dropped, more than the " +
                                                  number(allowed) + " allowed"};
        return std::nullopt;
    }
    const SenderState &s = sender->value;
    // A job_start at or below the sender's last seq is its own resend
    // (acknowledged delivery), not a second start.
    if (msg.kind == wire::MessageKind::job_start && !s.ended && msg.seq > s.seq)
        return Refused{Refusal::job_restart,
                       whose(msg) + "job_start from a sender already running (seq " + std::to_string(s.seq) + ")"};
    // A backlog the sampler queued during an outage arrives all at once:
    // its own clock then tells the time that passed.
    const double since_heard = static_cast<double>(now_mono_ns - sender->seen_ns);
    const double since_time = static_cast<double>(msg.time_ns) - static_cast<double>(s.time_ns);
    const double elapsed_s = std::max(since_heard, since_time) / 1e9;
    const uint64_t advance = saturating_add(msg.seq > s.seq ? msg.seq - s.seq : 0, msg.dropped);
    const double allowed = allowance(elapsed_s, s.period_s, msg.period_s);
    if (static_cast<double>(advance) > allowed)
        return Refused{Refusal::sequence,
                       whose(msg) + "seq " + std::to_string(msg.seq) + " after " + std::to_string(s.seq) + " with " +
                           std::to_string(msg.dropped) + " dropped: " + std::to_string(advance) + " messages in " +
                           number(std::max(elapsed_s, 0.0), 3) + " s, more than the " + number(allowed) + " allowed"};
    return std::nullopt;
}

bool Admission::spends_token(const wire::Message &msg, int64_t now_mono_ns) const
{
    // After a restart every running job is new to the collector: during the
    // first forget_after_s, only a job_start counts as a new job.
    const bool restarting = now_mono_ns - *m_first_ns < m_forget_ns;
    return m_limits.max_new_jobs_per_minute > 0 && (!restarting || msg.kind == wire::MessageKind::job_start);
}

void Admission::refill(HostState &host, int64_t now_mono_ns) const
{
    const double per_ns = m_limits.max_new_jobs_per_minute / 60e9;
    const double cap = m_limits.max_new_jobs_per_minute;
    if (now_mono_ns > host.tokens_ns)
        host.tokens = std::min(cap, host.tokens + static_cast<double>(now_mono_ns - host.tokens_ns) * per_ns);
    host.tokens_ns = now_mono_ns;
}

std::optional<Refused> Admission::check_pair(const wire::Message &msg, Pairs::Ref pair, int64_t now_mono_ns)
{
    const bool is_new = !pair;
    const bool opens =
        is_new ? msg.kind != wire::MessageKind::job_end : !pair->value.open && msg.kind == wire::MessageKind::job_start;
    if (!opens && !is_new)
        return std::nullopt;
    auto host_it = m_hosts.find(std::string_view(msg.host));
    HostState *host = host_it == m_hosts.end() ? nullptr : &host_it->second;  // a new host: nothing counted yet
    if (is_new && m_limits.max_hosts_per_job > 0) {
        auto job = m_jobs.find(std::string_view(msg.job_id));
        if (job != m_jobs.end() && job->second >= m_limits.max_hosts_per_job)
            return Refused{Refusal::hosts_per_job, whose(msg) + "the job already has " + std::to_string(job->second) +
                                                       " hosts (limit " + std::to_string(m_limits.max_hosts_per_job) +
                                                       ")"};
    }
    if (opens && host && m_limits.max_jobs_per_host > 0 && host->open >= m_limits.max_jobs_per_host)
        return Refused{Refusal::jobs_per_host, whose(msg) + "the host already runs " + std::to_string(host->open) +
                                                   " jobs (limit " + std::to_string(m_limits.max_jobs_per_host) + ")"};
    if (is_new && host && spends_token(msg, now_mono_ns)) {
        refill(*host, now_mono_ns);
        if (host->tokens < 1)
            return Refused{Refusal::new_jobs, whose(msg) + "more than " +
                                                  std::to_string(m_limits.max_new_jobs_per_minute) +
                                                  " new jobs per minute on this host"};
    }
    return std::nullopt;
}

void Admission::remember(const wire::Message &msg, Senders::Ref sender, Pairs::Ref pair, int64_t now_mono_ns)
{
    const bool starts = msg.kind == wire::MessageKind::job_start;
    const bool ends = msg.kind == wire::MessageKind::job_end;
    const bool is_slow = slow(msg);
    const auto forget = [this](Pairs::Entry &e) { forget_pair(e); };
    if (!sender) {
        m_senders.insert(msg.sender, SenderState{msg.seq, msg.time_ns, msg.period_s, ends}, now_mono_ns, is_slow,
                         k_forget_sender);
    } else {
        SenderState &s = sender->value;
        s.seq = std::max(s.seq, msg.seq);
        s.time_ns = std::max(s.time_ns, msg.time_ns);
        s.period_s = msg.period_s;
        s.ended = ends || (s.ended && !starts);
        m_senders.touch(sender, now_mono_ns, is_slow, k_forget_sender);
    }

    if (pair) {
        PairState &p = pair->value;
        if ((ends && p.open) || (starts && !p.open)) {
            p.open = !p.open;
            HostState &host = m_hosts.find(std::string_view(msg.host))->second;  // tracked with the pair
            if (p.open)
                ++host.open;
            else
                --host.open;
        }
        m_pairs.touch(pair, now_mono_ns, is_slow, forget);
        return;
    }
    // Inserting may first forget the least recently heard pair, and with it
    // perhaps this host's or this job's entry: count after.
    m_pairs.insert(m_key, PairState{!ends}, now_mono_ns, is_slow, forget);
    auto [host_it, added] = m_hosts.try_emplace(msg.host);
    HostState &host = host_it->second;
    if (added) {
        host.tokens = m_limits.max_new_jobs_per_minute;
        host.tokens_ns = now_mono_ns;
    }
    ++host.pairs;
    if (!ends)
        ++host.open;
    if (spends_token(msg, now_mono_ns)) {
        refill(host, now_mono_ns);
        host.tokens = std::max(host.tokens - 1, 0.0);
    }
    ++m_jobs[msg.job_id];
}

void Admission::forget_pair(Pairs::Entry &pair)
{
    const std::string_view key = pair.key;
    const size_t nul = key.find('\0');
    if (auto job = m_jobs.find(key.substr(0, nul)); job != m_jobs.end() && --job->second == 0)
        m_jobs.erase(job);
    if (auto host = m_hosts.find(key.substr(nul + 1)); host != m_hosts.end()) {
        if (pair.value.open)
            --host->second.open;
        if (--host->second.pairs == 0)
            m_hosts.erase(host);
    }
}

void Admission::expire(int64_t now_mono_ns)
{
    m_senders.expire(now_mono_ns, k_forget_sender);
    m_pairs.expire(now_mono_ns, [this](Pairs::Entry &e) { forget_pair(e); });
}

}  // namespace colmet::collector
