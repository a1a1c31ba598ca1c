// Sampler::apply with fake backends and a fake perfhw controller: what each
// request changes in the sampler and in the next message, and that a
// rejected request changes nothing.
#include "node/Sampler.hpp"
#include "node/control/PerfhwController.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

using namespace colmet;
using namespace colmet::node;
using namespace colmet::node::control;

namespace {

class NullTransport : public Transport {
public:
    bool send(std::string_view) noexcept override { return true; }
};

struct ControllerLog {
    int builds = 0;
    int releases = 0;
    int reopens = 0;
    bool fail_reopen = false;
};

// A backend; given a log, a live-controlled one (as perfhw), whose pause and
// resume are counted there. Its name is never what the sampler goes by.
class FakeBackend : public MetricBackend {
public:
    FakeBackend(std::string name, const std::vector<std::string> &metrics, ControllerLog *live = nullptr)
        : m_name(std::move(name)), m_live(live)
    {
        for (auto &m : metrics)
            m_metrics.push_back({m, "1", wire::MetricKind::counter});
    }
    std::string_view name() const override { return m_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override
    {
        for (double &v : values)
            v = 7;
        set_status("");
    }
    bool live_controlled() const override { return m_live != nullptr; }
    void pause() noexcept override
    {
        ++m_live->releases;
        released = true;
    }
    Result<void> resume() override
    {
        ++m_live->reopens;
        if (m_live->fail_reopen)
            return Error::system("perf_event_open", "cgroup", EBUSY);
        released = false;
        return ok();
    }
    bool released = false;

private:
    std::string m_name;
    ControllerLog *m_live;
    std::vector<wire::MetricDescriptor> m_metrics;
};

class FakeController : public PerfhwController {
public:
    explicit FakeController(ControllerLog &log) : m_log(log) {}
    Result<std::unique_ptr<MetricBackend>> build(const std::vector<std::string> &names) override
    {
        ++m_log.builds;
        for (const auto &n : names)
            if (n == "nonsense")
                return Error::invalid("unknown perf event 'nonsense'");
        if (names == std::vector<std::string>{"cpu_cycles"})
            return Error(Errc::unsupported, "perfhw: no event could be opened");
        std::vector<std::string> metrics = names;
        for (const auto &n : names)
            metrics.push_back(n + ".scaling");
        return std::unique_ptr<MetricBackend>(std::make_unique<FakeBackend>("counters", metrics, &m_log));
    }
    Result<std::unique_ptr<MetricBackend>> relocate(const cgroup::CgroupPaths &, const std::vector<std::string> &names,
                                                    MetricBackend *current) override
    {
        if (current != nullptr)
            return std::unique_ptr<MetricBackend>();
        return build(names);
    }

private:
    ControllerLog &m_log;
};

int64_t now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::vector<std::string> names_of(const wire::BackendBlock &b)
{
    std::vector<std::string> out;
    for (const auto &m : b.metrics)
        out.push_back(m.name);
    return out;
}

class SamplerControlTest : public ::testing::Test {
protected:
    // with_perfhw: a perfhw backend and its controller; waiting: the
    // controller only, its counters not open yet (a job's cgroup not found).
    std::unique_ptr<Sampler> make(bool with_perfhw = true, bool waiting = false)
    {
        SamplerConfig c;
        c.job_id = "42";
        c.host = "h";
        c.period_s = 5;
        c.collector_uri = "tcp://127.0.0.1:5556";
        std::vector<std::unique_ptr<MetricBackend>> b;
        b.push_back(std::make_unique<FakeBackend>("cgroup_cpu", std::vector<std::string>{"usage"}));
        if (with_perfhw || waiting)
            c.perfhw_events = {"task_clock"};
        if (with_perfhw) {
            b.push_back(std::make_unique<FakeBackend>(
                "counters", std::vector<std::string>{"task_clock", "task_clock.scaling"}, &log));
        }
        auto s = std::make_unique<Sampler>(c, std::move(b), std::make_unique<NullTransport>());
        if (with_perfhw || waiting)
            s->set_perfhw_controller(std::make_unique<FakeController>(log));
        return s;
    }
    ControllerLog log;
};

}  // namespace

TEST_F(SamplerControlTest, sample_now_takes_and_sends_one_sample_at_once)
{
    auto s = make();
    ControlRequest r;
    r.sample_now = true;
    auto a = s->apply(r);
    EXPECT_TRUE(a.accepted);
    EXPECT_EQ(a.changed, std::vector<std::string>{"sampled"});
    EXPECT_EQ(s->stats().samples, 1U);
    EXPECT_EQ(a.state->samples_sent, 1U);
    // A second request within the minimum period waits for it: never more
    // than one extra sample per 0.1 s.
    const int64_t first = s->message().time_ns;
    ASSERT_TRUE(s->apply(r).accepted);
    EXPECT_EQ(s->stats().samples, 2U);
    EXPECT_GE(s->message().time_ns - first, 99'000'000);
}

TEST_F(SamplerControlTest, status_reports_the_settings_in_force)
{
    auto s = make();
    auto a = s->apply(ControlRequest{});
    EXPECT_TRUE(a.accepted);
    EXPECT_TRUE(a.changed.empty());
    ASSERT_TRUE(a.state);
    EXPECT_EQ(
        *a.state,
        (ControlState{"42", 5, "counting", {"task_clock"}, 0, 0, "tcp://127.0.0.1:5556", "unacknowledged", 0, 0, 0}));
}

TEST_F(SamplerControlTest, a_period_change_realigns_the_next_sample_within_one_new_period)
{
    auto s = make();
    ControlRequest r;
    r.period_s = 0.2;
    int64_t before = now_ns();
    auto a = s->apply(r);
    ASSERT_TRUE(a.accepted) << a.reason;
    EXPECT_EQ(a.changed, std::vector<std::string>{"sample_period"});
    EXPECT_EQ(s->period_s(), 0.2);
    EXPECT_EQ(a.state->period_s, 0.2);
    EXPECT_GT(s->next_sample_ns(), before);
    EXPECT_LE(s->next_sample_ns() - before, 200'000'000 + 5'000'000);
    EXPECT_EQ(s->next_sample_ns() % 200'000'000, 0);
    s->sample_once(wire::MessageKind::sample);
    EXPECT_EQ(s->message().period_s, 0.2);
}

TEST_F(SamplerControlTest, an_out_of_range_period_is_rejected_and_nothing_changes)
{
    auto s = make();
    for (double p : {0.0, 0.01, 3601.0, std::nan("")}) {
        ControlRequest r;
        r.period_s = p;
        auto a = s->apply(r);
        EXPECT_FALSE(a.accepted);
        EXPECT_EQ(a.code, Rejection::invalid);
        EXPECT_EQ(s->period_s(), 5);
    }
}

TEST_F(SamplerControlTest, an_event_change_gives_the_next_message_new_descriptors)
{
    auto s = make();
    ControlRequest r;
    r.perfhw_events = std::vector<std::string>{"page_faults", "context_switches"};
    auto a = s->apply(r);
    ASSERT_TRUE(a.accepted) << a.reason;
    EXPECT_EQ(a.changed, std::vector<std::string>{"perfhw_events"});
    EXPECT_EQ(a.state->perfhw_events, *r.perfhw_events);
    s->sample_once(wire::MessageKind::sample);
    const auto &blk = s->message().backends[1];
    EXPECT_EQ(blk.name, "counters");
    EXPECT_EQ(names_of(blk), (std::vector<std::string>{"page_faults", "context_switches", "page_faults.scaling",
                                                       "context_switches.scaling"}));
    EXPECT_EQ(blk.values.size(), 4u);
    EXPECT_EQ(blk.values[0], 7);
    EXPECT_EQ(names_of(s->message().backends[0]), std::vector<std::string>{"usage"});
}

TEST_F(SamplerControlTest, the_same_event_list_changes_nothing)
{
    auto s = make();
    ControlRequest r;
    r.perfhw_events = std::vector<std::string>{"task_clock"};
    auto a = s->apply(r);
    EXPECT_TRUE(a.accepted);
    EXPECT_TRUE(a.changed.empty());
    EXPECT_EQ(log.builds, 0);
}

TEST_F(SamplerControlTest, an_unknown_event_is_rejected_by_name_and_nothing_changes)
{
    auto s = make();
    ControlRequest r;
    r.period_s = 1;  // the whole request fails: the period stays too
    r.perfhw_events = std::vector<std::string>{"page_faults", "nonsense"};
    auto a = s->apply(r);
    EXPECT_FALSE(a.accepted);
    EXPECT_EQ(a.code, Rejection::invalid);
    EXPECT_NE(a.reason.find("nonsense"), std::string::npos) << a.reason;
    ASSERT_TRUE(a.state);
    EXPECT_EQ(a.state->perfhw_events, std::vector<std::string>{"task_clock"});
    EXPECT_EQ(s->period_s(), 5);
    s->sample_once(wire::MessageKind::sample);
    EXPECT_EQ(names_of(s->message().backends[1]), (std::vector<std::string>{"task_clock", "task_clock.scaling"}));
}

TEST_F(SamplerControlTest, events_that_open_nowhere_are_unsupported)
{
    auto s = make();
    ControlRequest r;
    r.perfhw_events = std::vector<std::string>{"cpu_cycles"};
    auto a = s->apply(r);
    EXPECT_FALSE(a.accepted);
    EXPECT_EQ(a.code, Rejection::unsupported);
}

TEST_F(SamplerControlTest, pause_sends_nan_with_status_paused_and_resume_counts_again)
{
    auto s = make();
    ControlRequest pause;
    pause.perfhw = PerfhwAction::pause;
    auto a = s->apply(pause);
    ASSERT_TRUE(a.accepted) << a.reason;
    EXPECT_EQ(a.changed, std::vector<std::string>{"perfhw_paused"});
    EXPECT_EQ(a.state->perfhw, "paused");
    EXPECT_EQ(log.releases, 1);
    s->sample_once(wire::MessageKind::sample);
    const auto &blk = s->message().backends[1];
    EXPECT_EQ(blk.status, "paused");
    for (double v : blk.values)
        EXPECT_TRUE(std::isnan(v));
    EXPECT_EQ(names_of(blk), (std::vector<std::string>{"task_clock", "task_clock.scaling"}));
    EXPECT_EQ(s->message().backends[0].values[0], 7);  // the other backends go on

    // Pausing twice is harmless.
    EXPECT_TRUE(s->apply(pause).accepted);
    EXPECT_EQ(log.releases, 1);

    ControlRequest resume;
    resume.perfhw = PerfhwAction::resume;
    a = s->apply(resume);
    ASSERT_TRUE(a.accepted);
    EXPECT_EQ(a.changed, std::vector<std::string>{"perfhw_resumed"});
    EXPECT_EQ(log.reopens, 1);
    s->sample_once(wire::MessageKind::sample);
    EXPECT_EQ(s->message().backends[1].status, "");
    EXPECT_EQ(s->message().backends[1].values[0], 7);
}

TEST_F(SamplerControlTest, a_failed_resume_stays_paused)
{
    auto s = make();
    ControlRequest pause;
    pause.perfhw = PerfhwAction::pause;
    ASSERT_TRUE(s->apply(pause).accepted);
    log.fail_reopen = true;
    ControlRequest resume;
    resume.perfhw = PerfhwAction::resume;
    auto a = s->apply(resume);
    EXPECT_FALSE(a.accepted);
    EXPECT_EQ(a.code, Rejection::failed);
    EXPECT_TRUE(s->perfhw_paused());
}

TEST_F(SamplerControlTest, new_events_while_paused_stay_paused)
{
    auto s = make();
    ControlRequest pause;
    pause.perfhw = PerfhwAction::pause;
    ASSERT_TRUE(s->apply(pause).accepted);
    ControlRequest r;
    r.perfhw_events = std::vector<std::string>{"page_faults"};
    auto a = s->apply(r);
    ASSERT_TRUE(a.accepted);
    EXPECT_EQ(a.state->perfhw, "paused");
    EXPECT_EQ(log.releases, 2);  // the new backend's counters were released too
    s->sample_once(wire::MessageKind::sample);
    EXPECT_EQ(s->message().backends[1].status, "paused");
    EXPECT_EQ(names_of(s->message().backends[1]), (std::vector<std::string>{"page_faults", "page_faults.scaling"}));
}

TEST_F(SamplerControlTest, perfhw_requests_without_perfhw_are_refused_clearly)
{
    auto s = make(false);
    ControlRequest r;
    r.perfhw_events = std::vector<std::string>{"task_clock"};
    auto a = s->apply(r);
    EXPECT_FALSE(a.accepted);
    EXPECT_EQ(a.code, Rejection::unsupported);
    EXPECT_NE(a.reason.find("--enable-perfhw"), std::string::npos);
    EXPECT_EQ(a.state->perfhw, "off");

    ControlRequest period;
    period.period_s = 1;
    EXPECT_TRUE(s->apply(period).accepted);
}

TEST_F(SamplerControlTest, a_request_for_another_job_is_refused)
{
    auto s = make();
    ControlRequest r;
    r.job_id = "42:0";  // a request meant for another job
    r.period_s = 1;
    auto a = s->apply(r);
    EXPECT_FALSE(a.accepted);
    EXPECT_NE(a.reason.find("serves job 42, not 42:0"), std::string::npos) << a.reason;
    EXPECT_EQ(s->period_s(), 5);
    r.job_id = "42";
    EXPECT_TRUE(s->apply(r).accepted);
}

TEST_F(SamplerControlTest, perfhw_waiting_for_the_jobs_cgroup_is_reported_and_refuses_changes)
{
    auto s = make(false, true);
    EXPECT_EQ(s->state().perfhw, "waiting");
    EXPECT_EQ(s->state().perfhw_events, std::vector<std::string>{"task_clock"});
    ControlRequest r;
    r.perfhw = PerfhwAction::pause;
    auto a = s->apply(r);
    EXPECT_FALSE(a.accepted);
    EXPECT_EQ(a.code, Rejection::unsupported);
    EXPECT_NE(a.reason.find("waiting for job 42's cgroup"), std::string::npos) << a.reason;
    EXPECT_EQ(log.builds, 0);
    EXPECT_EQ(s->state().perfhw, "waiting");
}
