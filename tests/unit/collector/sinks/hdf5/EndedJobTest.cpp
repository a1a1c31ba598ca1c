// The HDF5 sink hands each ended job to the on-job-end listener once: when
// its last host ended, or after its silence (incomplete); not again for a
// rewritten summary or a job_end resent to a restarted collector; and the
// summary's JSON carries every number (NaN as null) and text made UTF-8.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "collector/sinks/hdf5/SummaryStore.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class EndedJobTest : public ::testing::Test {
protected:
    std::unique_ptr<collector::Hdf5Sink> sink(int idle_close_s = 600)
    {
        auto o = options(m_dir);
        o.idle_close_s = idle_close_s;
        auto s = make_sink(o);
        s->set_ended_job_listener([this](collector::EndedJob job) { m_ended.push_back(std::move(job)); });
        return s;
    }

    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("out");
    std::vector<collector::EndedJob> m_ended;
};

}  // namespace

TEST_F(EndedJobTest, a_job_is_announced_once_when_its_last_host_ended)
{
    auto s = sink();
    ASSERT_TRUE(s->announces_ended_jobs());
    s->consume(job_start("42", "a", k_t0, "4"), at(1));  // user alice
    s->consume(job_start("42", "b", k_t0, "4"), at(2));
    s->consume(message(MessageKind::sample, "42", "a", k_t0 + k_second, {cpu_block(2, 2, 0)}), at(3));
    s->consume(message(MessageKind::job_end, "42", "a", k_t0 + 2 * k_second, {cpu_block(4, 4, 0)}), at(4));
    EXPECT_TRUE(m_ended.empty()) << "b has not ended";
    s->consume(message(MessageKind::job_end, "42", "b", k_t0 + 4 * k_second, {cpu_block(4, 3, 1)}), at(5));
    ASSERT_EQ(m_ended.size(), 1u);
    const auto &job = m_ended[0];
    EXPECT_EQ(job.job_id, "42");
    EXPECT_EQ(job.user, "alice");
    EXPECT_EQ(job.file, job_file(m_dir, "42", JobFile::data).string());
    const auto json = nlohmann::json::parse(job.json);
    EXPECT_EQ(json["job_id"], "42");
    EXPECT_EQ(json["user"], "alice");
    EXPECT_EQ(json["file"], job.file);
    EXPECT_EQ(json["complete"], true);
    EXPECT_DOUBLE_EQ(json["summary"]["cpu_time_s"].get<double>(), 8);
    EXPECT_DOUBLE_EQ(json["summary"]["duration_s"].get<double>(), 4);
    EXPECT_DOUBLE_EQ(json["summary"]["cpus"].get<double>(), 8);
    EXPECT_TRUE(json["summary"]["peak_memory_bytes"].is_null()) << "unknown: null, never NaN";
    EXPECT_EQ(json["summary"]["hosts"], 2);
    EXPECT_EQ(json["summary"]["ended_ns"], k_t0 + 4 * k_second);
    // A loss recorded later writes the summary again: no second announcement.
    s->record_losses({{"42", "a", 5}}, 6);
    s->close_all();
    EXPECT_EQ(m_ended.size(), 1u);
    // A restarted collector that gets the job_end again (a resend).
    auto again = sink();
    again->consume(message(MessageKind::job_end, "42", "b", k_t0 + 4 * k_second, {cpu_block(4, 3, 1)}), at(7));
    again->close_all();
    EXPECT_EQ(m_ended.size(), 1u) << "ended before the restart: not announced again";
}

// Once per job the collector remembers: a job_end after the job was
// forgotten (its file closed after its silence) announces it again, complete.
TEST_F(EndedJobTest, a_silent_job_is_announced_incomplete_and_again_complete_at_its_late_end)
{
    auto s = sink(60);
    const int64_t t = 1000 * k_second;
    s->consume(job_start("7", "a", k_t0, "2"), at(t));
    s->consume(message(MessageKind::sample, "7", "a", k_t0 + k_second, {cpu_block(1, 1, 0)}), at(t + 1));
    s->tick(t + 61 * k_second);
    ASSERT_EQ(m_ended.size(), 1u);
    const auto json = nlohmann::json::parse(m_ended[0].json);
    EXPECT_EQ(json["complete"], false);
    EXPECT_EQ(json["summary"]["hosts_without_job_end"], 1);
    // Its silence without a job end is flagged, in the summary and the file.
    ASSERT_EQ(json["flags"].size(), 1u) << json.dump();
    EXPECT_EQ(json["flags"][0]["name"], "stopped_sending");
    s->tick(t + 100 * k_second);
    EXPECT_EQ(m_ended.size(), 1u) << "once per silence";
    s->consume(message(MessageKind::job_end, "7", "a", k_t0 + 2 * k_second, {cpu_block(2, 2, 0)}),
               at(t + 300 * k_second));
    ASSERT_EQ(m_ended.size(), 2u);
    const auto late = nlohmann::json::parse(m_ended[1].json);
    EXPECT_EQ(late["complete"], true);
    // The sink forgot the job, and read its flag back from the file with it.
    ASSERT_EQ(late["flags"].size(), 1u) << late.dump();
    EXPECT_EQ(late["flags"][0], json["flags"][0]);
}

TEST(SummaryJson, text_that_is_not_utf8_is_replaced_never_refused)
{
    collector::JobSummary s;
    s.job_id = "job\xff\xfe";
    s.cgroup_warning = "h: no process in /x";
    const auto json = nlohmann::json::parse(collector::summary_json(s, "b\xc3"));
    EXPECT_EQ(json["job_id"], "job\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_EQ(json["user"], "b\xef\xbf\xbd");
    EXPECT_EQ(json["cgroup_warning"], "h: no process in /x");
    EXPECT_TRUE(json["summary"]["cpu_efficiency"].is_null());
    EXPECT_TRUE(json["flags"].is_array() && json["flags"].empty());
    s.flags = {{"memory_unused", "host h used at most 1 MiB", 42}};
    const auto flagged = nlohmann::json::parse(collector::summary_json(s, "b"));
    EXPECT_EQ(flagged["flags"][0],
              nlohmann::json({{"name", "memory_unused"}, {"text", "host h used at most 1 MiB"}, {"since_ns", 42}}));
}
