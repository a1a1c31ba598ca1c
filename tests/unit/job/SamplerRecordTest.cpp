#include "job/SamplerRecord.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace colmet::job;

namespace {
fs::path temp_dir()
{
    char tmpl[] = "/tmp/colmet-record-XXXXXX";
    return mkdtemp(tmpl);
}
}  // namespace

TEST(SamplerRecord, RoundTripsAndRefusesForgedLines)
{
    auto dir = temp_dir();
    SamplerRecord r;
    r.pid = 4242;
    r.start_ticks = 99;
    r.job_id = "42.batch";
    r.user = "o'neil";
    r.cgroup = "/oar/o'neil_42";
    r.cgroup_root = "/sys/fs/cgroup";
    r.period_s = 0.5;
    r.collector = "tcp://10.0.0.1:5556";
    r.spec = "perfhw:a\npid=1";  // a newline must not forge a key
    r.perf_root = "/sys/fs/cgroup/perf_event";
    r.perf_cgroup_created = true;
    r.created_from = "/oar";
    r.started_ns = 123456789;
    auto path = record_path(dir, r.job_id);
    EXPECT_EQ(path.filename(), "42.batch.pid");
    ASSERT_TRUE(write_record(path, r));
    auto back = read_record(path);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(back->pid, 4242);
    EXPECT_EQ(back->start_ticks, 99u);
    EXPECT_EQ(back->user, "o'neil");
    EXPECT_EQ(back->spec, "perfhw:a pid=1");
    EXPECT_DOUBLE_EQ(back->period_s, 0.5);
    EXPECT_TRUE(back->perf_cgroup_created);
    EXPECT_FALSE(back->job_cgroup_created);
    EXPECT_EQ(back->created_from, "/oar");
    EXPECT_EQ(back->started_ns, 123456789);
    EXPECT_EQ(record_path(dir, "../x").filename(), "%2E.%2Fx.pid");

    std::ofstream(dir / "junk.pid") << "hello\n";
    auto all = list_records(dir);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_TRUE(all[0].second);   // 42.batch.pid
    EXPECT_FALSE(all[1].second);  // junk.pid: no pid line
    fs::remove_all(dir);
}

TEST(SamplerRecord, AliveOnlyForTheSameProcess)
{
    SamplerRecord self;
    self.pid = getpid();
    self.start_ticks = process_start_ticks(getpid());
    ASSERT_GT(self.start_ticks, 0u);
    EXPECT_TRUE(sampler_alive(self));
    SamplerRecord reused = self;
    reused.start_ticks += 1;  // same pid, another process
    EXPECT_FALSE(sampler_alive(reused));
    SamplerRecord gone;
    gone.pid = 0x3ffffff;
    EXPECT_FALSE(sampler_alive(gone));
}
