#include "collector/Admission.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

using namespace colmet;
using namespace colmet::collector;

namespace {

constexpr int64_t k_s = 1'000'000'000;
constexpr int64_t k_now_real = 1'796'000'000 * k_s;  // the collector's CLOCK_REALTIME in these tests
constexpr int64_t k_mono0 = 1000 * k_s;              // CLOCK_MONOTONIC at the first message

wire::Message message(const std::string &job, const std::string &host, const std::string &sender, uint64_t seq,
                      wire::MessageKind kind = wire::MessageKind::sample)
{
    wire::Message m;
    m.kind = kind;
    m.job_id = job;
    m.host = host;
    m.sender = sender;
    m.seq = seq;
    m.time_ns = k_now_real;
    m.period_s = 5;
    return m;
}

// Admit msg at mono_s seconds after the first message (its time follows).
std::optional<Refused> admit(Admission &a, wire::Message msg, double mono_s)
{
    const auto offset = static_cast<int64_t>(mono_s * 1e9);
    msg.time_ns += offset;
    return a.admit(msg, k_mono0 + offset, k_now_real + offset);
}

Refusal reason(const std::optional<Refused> &r)
{
    EXPECT_TRUE(r.has_value());
    return r ? r->reason : Refusal::clock;
}

}  // namespace

TEST(Admission, admits_what_a_sampler_sends)
{
    Admission a;
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 0, wire::MessageKind::job_start), 0));
    for (uint64_t seq = 1; seq <= 100; ++seq)
        EXPECT_FALSE(admit(a, message("1", "n1", "s", seq), 5.0 * static_cast<double>(seq)));
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 101, wire::MessageKind::job_end), 502));
    EXPECT_EQ(a.senders(), 1u);
    EXPECT_EQ(a.pairs(), 1u);
}

TEST(Admission, refuses_a_time_far_ahead_or_far_behind_the_collectors_clock)
{
    Admission a({.max_clock_skew_s = 600, .max_message_delay_s = 3600});
    auto m = message("1", "n1", "s", 0);
    m.time_ns = k_now_real + 601 * k_s;
    auto r = a.admit(m, k_mono0, k_now_real);
    EXPECT_EQ(reason(r), Refusal::clock);
    EXPECT_NE(r->why.find("601 s ahead"), std::string::npos) << r->why;
    m.time_ns = k_now_real + 599 * k_s;
    EXPECT_FALSE(a.admit(m, k_mono0, k_now_real));
    // Behind: the skew plus the delay a queued message may have.
    m.time_ns = k_now_real - (600 + 3600 - 1) * k_s;
    m.seq = 1;
    EXPECT_FALSE(a.admit(m, k_mono0, k_now_real));
    m.time_ns = k_now_real - (600 + 3600 + 1) * k_s;
    m.seq = 2;
    r = a.admit(m, k_mono0, k_now_real);
    EXPECT_EQ(reason(r), Refusal::clock);
    EXPECT_NE(r->why.find("behind"), std::string::npos) << r->why;
    m.time_ns = 0;  // 1970
    EXPECT_EQ(reason(a.admit(m, k_mono0, k_now_real)), Refusal::clock);
}

TEST(Admission, a_skew_of_zero_turns_the_time_check_off)
{
    Admission a({.max_clock_skew_s = 0});
    auto m = message("1", "n1", "s", 0);
    m.time_ns = 5;
    EXPECT_FALSE(a.admit(m, k_mono0, k_now_real));
}

TEST(Admission, refuses_a_seq_jump_beyond_what_the_period_allows)
{
    Admission a;
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 10), 0));
    // 1 s later, period 5 s: 1000 + 2 x 1 s x (1/5 + 10) = 1020.4 messages at most.
    auto r = admit(a, message("1", "n1", "s", 10 + 1021), 1);
    EXPECT_EQ(reason(r), Refusal::sequence);
    EXPECT_NE(r->why.find("sender s"), std::string::npos) << r->why;
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 10 + 1020), 1));
    // A forged seq near the top of the range.
    EXPECT_EQ(reason(admit(a, message("1", "n1", "s", std::numeric_limits<uint64_t>::max()), 2)), Refusal::sequence);
    // Going back (a duplicate, a reordered message) costs nothing.
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 3), 2));
}

TEST(Admission, refuses_a_dropped_count_beyond_what_the_period_allows)
{
    Admission a;
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 0), 0));
    auto m = message("1", "n1", "s", 1);
    m.dropped = 5000;
    EXPECT_EQ(reason(admit(a, m, 10)), Refusal::sequence);
    m.dropped = std::numeric_limits<uint64_t>::max();  // must not overflow with the seq advance
    EXPECT_EQ(reason(admit(a, m, 10)), Refusal::sequence);
    // Nearly five minutes without reaching the collector at 5 s: 58 messages.
    m.dropped = 58;
    EXPECT_FALSE(admit(a, m, 290));
}

TEST(Admission, a_backlog_arriving_at_once_is_judged_by_the_senders_clock)
{
    // A sampler at 0.1 s whose link to the collector was down for 250 s: its
    // queue held the first 1000 messages (100 s), sent at once when the link
    // came back, and its next message reports the 1500 it could not queue.
    // The collector hears them all at once; the sampler's clock tells the time.
    Admission a;
    auto m = message("1", "n1", "s", 0);
    m.period_s = 0.1;
    EXPECT_FALSE(a.admit(m, k_mono0, k_now_real));
    const int64_t back_mono = k_mono0 + 250 * k_s, back_real = k_now_real + 250 * k_s;
    for (uint64_t i = 1; i <= 1000; ++i) {
        m.seq = i;
        m.time_ns = k_now_real + static_cast<int64_t>(i) * k_s / 10;
        EXPECT_FALSE(a.admit(m, back_mono, back_real));
    }
    m.seq = 1001;
    m.dropped = 1500;
    m.time_ns = back_real;
    EXPECT_FALSE(a.admit(m, back_mono + 1000, back_real));
    // Not so with a sampler clock that did not move.
    m.seq = 1002;
    EXPECT_EQ(reason(a.admit(m, back_mono + 2000, back_real)), Refusal::sequence);
}

TEST(Admission, a_senders_first_message_is_accepted_whatever_its_seq)
{
    Admission a;
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 123'456'789), 0));
    // ...but its dropped count is bounded as if the previous message had come
    // forget_after_s (300 s) ago: 1000 + 2 x 300 x (1/5 + 10) = 7120.
    auto m = message("1", "n1", "t", 0);
    m.dropped = 7130;
    EXPECT_EQ(reason(admit(a, m, 0)), Refusal::sequence);
    m.dropped = 7110;
    EXPECT_FALSE(admit(a, m, 0));
}

TEST(Admission, a_forgotten_sender_starts_afresh)
{
    Admission a({.forget_after_s = 300});
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 0), 0));
    EXPECT_EQ(reason(admit(a, message("1", "n1", "s", 1'000'000), 10)), Refusal::sequence);
    // Silent for more than 300 s: forgotten, its next message is a first one.
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 1'000'000), 311));
    EXPECT_EQ(a.senders(), 1u);
}

TEST(Admission, refuses_a_second_job_start_from_a_running_sender)
{
    Admission a;
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 0, wire::MessageKind::job_start), 0));
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 1), 5));
    auto r = admit(a, message("1", "n1", "s", 2, wire::MessageKind::job_start), 10);
    EXPECT_EQ(reason(r), Refusal::job_restart);
    // The first job_start again is a resend (acknowledged delivery sends
    // again what was not acknowledged): admitted, the sinks drop it as a
    // duplicate of what they hold.
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 0, wire::MessageKind::job_start), 11));
    // Another sampler of the same job on the same host may start (a restarted sampler).
    EXPECT_FALSE(admit(a, message("1", "n1", "s2", 0, wire::MessageKind::job_start), 12));
    // Once the sender ended, a new start is no longer a duplicate.
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 2, wire::MessageKind::job_end), 15));
    EXPECT_FALSE(admit(a, message("1", "n1", "s", 3, wire::MessageKind::job_start), 16));
}

TEST(Admission, caps_the_hosts_of_a_job)
{
    Admission a({.max_hosts_per_job = 3});
    for (int h = 0; h < 3; ++h)
        EXPECT_FALSE(admit(a, message("big", "n" + std::to_string(h), "s" + std::to_string(h), 0), 0));
    auto r = admit(a, message("big", "n3", "s3", 0), 1);
    EXPECT_EQ(reason(r), Refusal::hosts_per_job);
    // The hosts already there go on; other jobs are not affected.
    EXPECT_FALSE(admit(a, message("big", "n1", "s1", 1), 5));
    EXPECT_FALSE(admit(a, message("small", "n3", "s4", 0), 5));
    // An ended host still counts while remembered; a forgotten one no longer does.
    EXPECT_FALSE(admit(a, message("big", "n0", "s0", 1, wire::MessageKind::job_end), 6));
    EXPECT_EQ(reason(admit(a, message("big", "n3", "s3", 0), 7)), Refusal::hosts_per_job);
    for (int h = 1; h < 3; ++h)  // n1, n2 keep sending; n0 is silent
        EXPECT_FALSE(admit(a, message("big", "n" + std::to_string(h), "s" + std::to_string(h), 2), 300));
    EXPECT_FALSE(admit(a, message("big", "n3", "s3", 0), 310));
}

TEST(Admission, caps_the_open_jobs_of_a_host)
{
    Admission a({.max_jobs_per_host = 2});
    EXPECT_FALSE(admit(a, message("1", "n1", "a", 0, wire::MessageKind::job_start), 0));
    EXPECT_FALSE(admit(a, message("2", "n1", "b", 0, wire::MessageKind::job_start), 0));
    auto r = admit(a, message("3", "n1", "c", 0, wire::MessageKind::job_start), 1);
    EXPECT_EQ(reason(r), Refusal::jobs_per_host);
    EXPECT_NE(r->why.find("host n1"), std::string::npos) << r->why;
    EXPECT_EQ(reason(admit(a, message("3", "n1", "c", 0), 1)), Refusal::jobs_per_host);
    EXPECT_FALSE(admit(a, message("3", "n2", "d", 0), 1));  // another host
    // A job that ends frees its place.
    EXPECT_FALSE(admit(a, message("1", "n1", "a", 1, wire::MessageKind::job_end), 2));
    EXPECT_FALSE(admit(a, message("3", "n1", "c", 0, wire::MessageKind::job_start), 3));
    EXPECT_EQ(reason(admit(a, message("4", "n1", "e", 0, wire::MessageKind::job_start), 3)), Refusal::jobs_per_host);
    // A job silent for the forget time no longer counts as open.
    EXPECT_FALSE(admit(a, message("3", "n1", "c", 1), 200));
    EXPECT_FALSE(admit(a, message("4", "n1", "e", 0, wire::MessageKind::job_start), 310));
}

TEST(Admission, limits_new_jobs_per_host_and_minute)
{
    Admission a({.max_new_jobs_per_minute = 3});
    auto start = [](int job, const std::string &host) {
        return message(std::to_string(job), host, host + "/" + std::to_string(job), 0, wire::MessageKind::job_start);
    };
    for (int j = 0; j < 3; ++j)
        EXPECT_FALSE(admit(a, start(j, "n1"), 0));
    auto r = admit(a, start(3, "n1"), 1);
    EXPECT_EQ(reason(r), Refusal::new_jobs);
    EXPECT_FALSE(admit(a, start(3, "n2"), 1));  // per host
    // One more every 20 s.
    EXPECT_EQ(reason(admit(a, start(3, "n1"), 19)), Refusal::new_jobs);
    EXPECT_FALSE(admit(a, start(3, "n1"), 21));
    EXPECT_EQ(reason(admit(a, start(4, "n1"), 22)), Refusal::new_jobs);
    // Jobs already known go on.
    EXPECT_FALSE(admit(a, message("0", "n1", "n1/0", 1), 22));
}

TEST(Admission, after_a_restart_running_jobs_reappearing_are_not_new_jobs)
{
    // A restarted collector hears the samples of every running job: during
    // its first forget_after_s they do not count as new jobs, job starts do.
    Admission a({.max_new_jobs_per_minute = 2});
    for (int j = 0; j < 10; ++j)
        EXPECT_FALSE(admit(a, message(std::to_string(j), "n1", "s" + std::to_string(j), 500), 1));
    EXPECT_FALSE(admit(a, message("10", "n1", "s10", 0, wire::MessageKind::job_start), 2));
    EXPECT_FALSE(admit(a, message("11", "n1", "s11", 0, wire::MessageKind::job_start), 2));
    EXPECT_EQ(reason(admit(a, message("12", "n1", "s12", 0, wire::MessageKind::job_start), 2)), Refusal::new_jobs);
    // Later, a sample of an unknown job is a new job too.
    for (int j = 0; j < 10; ++j)
        EXPECT_FALSE(admit(a, message(std::to_string(j), "n1", "s" + std::to_string(j), 501), 250));
    EXPECT_FALSE(admit(a, message("20", "n1", "s20", 7), 301));
    EXPECT_FALSE(admit(a, message("21", "n1", "s21", 7), 301));
    EXPECT_EQ(reason(admit(a, message("22", "n1", "s22", 7), 301)), Refusal::new_jobs);
}

TEST(Admission, zero_turns_the_caps_off)
{
    Admission a({.max_hosts_per_job = 0, .max_jobs_per_host = 0, .max_new_jobs_per_minute = 0});
    for (int j = 0; j < 500; ++j)
        EXPECT_FALSE(admit(a,
                           message(std::to_string(j % 50), "n" + std::to_string(j % 7), "s" + std::to_string(j), 0,
                                   wire::MessageKind::job_start),
                           0));
}

TEST(Admission, refused_messages_leave_no_state)
{
    Admission a({.max_jobs_per_host = 1});
    EXPECT_FALSE(admit(a, message("1", "n1", "a", 0), 0));
    EXPECT_TRUE(admit(a, message("2", "n1", "b", 0), 0));
    EXPECT_EQ(a.senders(), 1u);
    EXPECT_EQ(a.pairs(), 1u);
    EXPECT_EQ(a.jobs(), 1u);
}

TEST(Admission, its_tables_stay_bounded)
{
    Admission a({.max_hosts_per_job = 0, .max_jobs_per_host = 0, .max_new_jobs_per_minute = 0, .max_tracked = 100});
    for (int i = 0; i < 10'000; ++i) {
        const std::string n = std::to_string(i);
        EXPECT_FALSE(admit(a, message("j" + n, "h" + std::to_string(i % 300), "s" + n, 0), i / 1000.0));
    }
    EXPECT_EQ(a.senders(), 100u);
    EXPECT_EQ(a.pairs(), 100u);
    EXPECT_LE(a.hosts(), 100u);
    EXPECT_EQ(a.jobs(), 100u);
    // Everything idle is forgotten.
    EXPECT_FALSE(admit(a, message("last", "h", "s", 0), 10 + 301));
    EXPECT_EQ(a.senders(), 1u);
    EXPECT_EQ(a.pairs(), 1u);
    EXPECT_EQ(a.hosts(), 1u);
    EXPECT_EQ(a.jobs(), 1u);
}

TEST(Admission, a_sender_with_a_long_period_is_kept_for_two_periods)
{
    // A 600 s period: still known 1,000 s after its last message, so a
    // second job_start from it is still a restart; forgotten after 2 x 3600 s.
    Admission a({.forget_after_s = 300});
    auto start = message("1", "n1", "s", 0, wire::MessageKind::job_start);
    start.period_s = 600;
    EXPECT_FALSE(admit(a, start, 0));
    auto sample = message("1", "n1", "s", 1);
    sample.period_s = 600;
    EXPECT_FALSE(admit(a, sample, 600));
    auto restart = message("1", "n1", "s", 2, wire::MessageKind::job_start);
    restart.period_s = 600;
    EXPECT_EQ(reason(admit(a, restart, 1600)), Refusal::job_restart);
    EXPECT_EQ(a.senders(), 1u);
    EXPECT_EQ(a.pairs(), 1u);
    // Silent for longer than 2 x 3600 s: forgotten.
    auto late = message("1", "n1", "s2", 0);
    EXPECT_FALSE(admit(a, late, 600 + 7201));
    EXPECT_EQ(a.senders(), 1u);  // s2 only
    // A period that shortens moves it back to the short class: forgotten
    // 300 s after its last message.
    late.seq = 1;
    EXPECT_FALSE(admit(a, late, 600 + 7202));
    auto other = message("2", "n2", "s3", 0);
    EXPECT_FALSE(admit(a, other, 600 + 7202 + 301));
    EXPECT_EQ(a.senders(), 1u);  // s3 only
}

TEST(Admission, jobs_with_a_long_period_are_not_new_jobs_at_each_sample)
{
    // 100 jobs on one host sampled every 600 s, all started before: each of
    // their samples is a job the host already runs, not a new one (forgotten
    // after 300 s, each sample spent a token of the 60 per minute and 40 of
    // the 100 were refused).
    Admission a({.max_new_jobs_per_minute = 60, .forget_after_s = 300});
    for (int j = 0; j < 100; ++j) {
        auto start = message(std::to_string(j), "n1", "s" + std::to_string(j), 0, wire::MessageKind::job_start);
        start.period_s = 600;
        EXPECT_FALSE(admit(a, start, j));  // at the rate the tokens refill: one a second
    }
    for (int round = 1; round <= 3; ++round)
        for (int j = 0; j < 100; ++j) {
            auto sample = message(std::to_string(j), "n1", "s" + std::to_string(j), static_cast<uint64_t>(round));
            sample.period_s = 600;
            auto r = admit(a, sample, 600.0 * round + 100 + 0.1 * j);
            EXPECT_FALSE(r) << "round " << round << " job " << j << ": " << (r ? r->why : "");
        }
    EXPECT_EQ(a.pairs(), 100u);
}
