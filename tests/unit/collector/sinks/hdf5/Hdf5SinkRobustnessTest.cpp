// Hdf5Sink under hostile ids, many jobs, restarts, broken files and disks.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <cstdio>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class Hdf5SinkRobustnessTest : public ::testing::Test {
protected:
    test::FakeTree m_tree;
    std::filesystem::path m_dir = m_tree.path("out");

    std::vector<std::filesystem::path> entries(const std::filesystem::path &dir) const
    {
        std::vector<std::filesystem::path> out;
        for (const auto &e : std::filesystem::directory_iterator(dir))
            out.push_back(e.path());
        return out;
    }
};

std::string read_text(const std::filesystem::path &path)
{
    std::string text;
    if (std::FILE *f = std::fopen(path.c_str(), "rb")) {
        char buf[256];
        size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
            text.append(buf, n);
        std::fclose(f);
    }
    return text;
}

void run_job(collector::Hdf5Sink &sink, const std::string &job, int samples)
{
    sink.consume(job_start(job, "h", k_t0, "1"), at(1));
    for (int i = 1; i <= samples; ++i)
        sink.consume(message(MessageKind::sample, job, "h", k_t0 + i * k_second, {cpu_block(i, i, 0)}), at(1 + i));
    sink.consume(
        message(MessageKind::job_end, job, "h", k_t0 + (samples + 1) * k_second, {cpu_block(samples + 1, 0, 0)}),
        at(samples + 2));
}

TEST_F(Hdf5SinkRobustnessTest, job_file_path_stays_in_dir_and_is_distinct)
{
    const std::filesystem::path dir = "/data/colmet";
    EXPECT_EQ(job_file(dir, "123.0", JobFile::data), dir / "123.0.h5");
    EXPECT_EQ(job_file(dir, "4567_8", JobFile::data), dir / "4567_8.h5");
    const std::vector<std::string> ids{"../../etc/x",        "..", ".", "a/b", "/abs", "", std::string(300, 'x'),
                                       std::string(300, '/')};
    for (const auto &id : ids)
        for (JobFile kind : {JobFile::data, JobFile::summary}) {
            auto p = job_file(dir, id, kind);
            EXPECT_EQ(p.parent_path(), dir) << id;
            EXPECT_NE(p.filename().string().front(), '.') << id;
            EXPECT_LT(p.filename().string().size(), 255u) << id;
        }
    EXPECT_NE(job_file(dir, "a/b", JobFile::data), job_file(dir, "a_b", JobFile::data));
    EXPECT_NE(job_file(dir, std::string(200, 'x') + "1", JobFile::data),
              job_file(dir, std::string(200, 'x') + "2", JobFile::data));
}

TEST_F(Hdf5SinkRobustnessTest, hostile_job_ids_stay_inside_dir)
{
    auto sink = make_sink(options(m_dir));
    const std::vector<std::string> ids{"../../etc/x",         "..",       ".",   "a/b", "a_b",
                                       std::string(300, 'y'), "/tmp/abs", "x\ny"};
    for (const auto &id : ids)
        run_job(*sink, id, 3);
    EXPECT_EQ(sink->stats().write_errors, 0u);
    EXPECT_EQ(sink->open_files(), 0u);

    auto top = entries(m_tree.root());
    ASSERT_EQ(top.size(), 1u) << "nothing beside the output directory";
    EXPECT_EQ(top[0], m_dir);
    auto files = entries(m_dir);
    EXPECT_EQ(files.size(), 2 * ids.size()) << "one file and one summary per distinct id";
    for (const auto &f : files) {
        EXPECT_TRUE(std::filesystem::is_regular_file(f)) << f;
        EXPECT_TRUE(f.extension() == ".h5" || f.extension() == ".json") << f;
    }
    for (const auto &id : ids) {
        auto json = collector::read_summary_file(job_file(sink->dir(), id, JobFile::summary));
        ASSERT_TRUE(json.ok()) << id << ": " << json.error().message();
        EXPECT_EQ(json->job_id, id) << "the JSON keeps the original id";
        EXPECT_EQ(json->file, job_file(sink->dir(), id, JobFile::data));
        auto s = collector::read_job_summary(job_file(sink->dir(), id, JobFile::data));
        ASSERT_TRUE(s.ok()) << id << ": " << s.error().message();
        EXPECT_EQ(s->job_id, id) << "the original id is kept as an attribute";
        EXPECT_EQ(s->samples_received, 5u);
    }
}

TEST_F(Hdf5SinkRobustnessTest, hostile_host_and_backend_names_become_safe_groups)
{
    auto sink = make_sink(options(m_dir));
    auto m = message(MessageKind::sample, "j", "../evil/host", k_t0,
                     {block("../b/x", {{"m", "1", MetricKind::gauge}}, {1})});
    sink->consume(m, at(1));
    sink->close_all();
    EXPECT_EQ(sink->stats().write_errors, 0u);
    Reader r(job_file(m_dir, "j", JobFile::data));
    const std::string host = "/hosts/" + collector::hdf5::object_name("../evil/host");
    ASSERT_TRUE(r.exists(host));
    EXPECT_EQ(r.string(host, "hostname"), "../evil/host");
    EXPECT_EQ(r.string(host + "/" + collector::hdf5::object_name("../b/x"), "name"), "../b/x");
}

TEST_F(Hdf5SinkRobustnessTest, max_open_files_bounds_open_files_and_every_job_completes)
{
    auto o = options(m_dir);
    o.max_open_files = 2;
    o.batch_rows = 16;
    auto sink = make_sink(o);
    const int jobs = 5, samples = 100;
    for (int j = 0; j < jobs; ++j)
        sink->consume(job_start("job" + std::to_string(j), "h", k_t0, "1"), at(1));
    int64_t mono = 10;
    for (int i = 1; i <= samples; ++i)
        for (int j = 0; j < jobs; ++j) {
            sink->consume(message(MessageKind::sample, "job" + std::to_string(j), "h", k_t0 + i * k_second,
                                  {cpu_block(i * (j + 1.0), i, 0)}),
                          at(++mono));
            ASSERT_LE(sink->open_files(), 2u);
        }
    for (int j = 0; j < jobs; ++j)
        sink->consume(message(MessageKind::job_end, "job" + std::to_string(j), "h", k_t0 + 1000 * k_second,
                              {cpu_block(1000.0 * (j + 1), 0, 0)}),
                      at(++mono));
    auto stats = sink->stats();
    EXPECT_EQ(sink->open_files(), 0u);
    EXPECT_EQ(stats.write_errors, 0u);
    EXPECT_GT(stats.files_opened, 5u) << "files were closed and reopened";
    EXPECT_EQ(stats.files_opened, stats.files_closed);
    EXPECT_EQ(stats.rows_written, jobs * (samples + 1u));
    for (int j = 0; j < jobs; ++j) {
        auto file = job_file(m_dir, "job" + std::to_string(j), JobFile::data);
        Reader r(file);
        size_t cols = 0;
        auto v = r.values("/hosts/h/cgroup_cpu/segment_0", &cols);
        ASSERT_EQ(v.size(), (samples + 1u) * 3) << file;
        EXPECT_EQ(v[static_cast<size_t>(samples - 1) * 3], samples * (j + 1.0));
        EXPECT_FALSE(r.exists("/hosts/h/cgroup_cpu/segment_1"));
        r.close();
        auto s = collector::read_job_summary(file);
        ASSERT_TRUE(s.ok());
        EXPECT_DOUBLE_EQ(s->cpu_time_s, 1000.0 * (j + 1));
    }
}

TEST_F(Hdf5SinkRobustnessTest, a_new_sink_continues_the_file_after_a_restart)
{
    {
        auto sink = make_sink(options(m_dir));
        sink->consume(job_start("r", "h", k_t0, "2"), at(1));
        for (int i = 1; i <= 10; ++i)
            sink->consume(message(MessageKind::sample, "r", "h", k_t0 + i * k_second,
                                  {cpu_block(i, i, 0), memory_block(i, i == 4 ? 7e9 : 1e9)}),
                          at(1 + i));
        sink->close_all();  // collector stopped before the job ended
    }
    auto sink = make_sink(options(m_dir));
    for (int i = 11; i <= 15; ++i)
        sink->consume(
            message(MessageKind::sample, "r", "h", k_t0 + i * k_second, {cpu_block(i, i, 0), memory_block(i, 1e9)}),
            at(100 + i));
    // A backend whose metrics changed while the collector was down.
    sink->consume(message(MessageKind::sample, "r", "h", k_t0 + 16 * k_second,
                          {block("cgroup_memory", {{"current", "B", MetricKind::gauge}}, {5})}),
                  at(200));
    sink->consume(message(MessageKind::job_end, "r", "h", k_t0 + 20 * k_second, {cpu_block(k_nan, 0, 0)}), at(300));
    EXPECT_EQ(sink->stats().write_errors, 0u);

    auto file = job_file(m_dir, "r", JobFile::data);
    Reader r(file);
    EXPECT_EQ(r.time("/hosts/h/cgroup_cpu/segment_0").size(), 16u) << "descriptors match: same segment";
    EXPECT_EQ(r.time("/hosts/h/cgroup_memory/segment_0").size(), 15u);
    EXPECT_EQ(r.strings("/hosts/h/cgroup_memory/segment_1", "names"), std::vector<std::string>{"current"});
    EXPECT_EQ(r.i64("/hosts/h", "samples_received"), 18);
    EXPECT_EQ(r.i64("/hosts/h", "job_start_ns"), k_t0);
    r.close();
    auto s = collector::read_job_summary(file);
    ASSERT_TRUE(s.ok());
    EXPECT_DOUBLE_EQ(s->cpu_time_s, 15);
    EXPECT_DOUBLE_EQ(s->peak_memory_bytes, 7e9);
    EXPECT_DOUBLE_EQ(s->duration_s, 20);
    EXPECT_DOUBLE_EQ(s->cpu_efficiency, 15.0 / (20 * 2));
}

TEST_F(Hdf5SinkRobustnessTest, an_unreadable_file_is_renamed_aside_and_a_new_one_started)
{
    m_tree.write("out/bad.h5", "this is not an HDF5 file");
    auto sink = make_sink(options(m_dir));
    run_job(*sink, "bad", 2);
    EXPECT_EQ(sink->stats().files_quarantined, 1u);
    bool found_aside = false;
    for (const auto &f : entries(m_dir))
        if (f.filename().string().rfind("bad.h5.corrupt-", 0) == 0) {
            found_aside = true;
            EXPECT_EQ(read_text(f), "this is not an HDF5 file");
        }
    EXPECT_TRUE(found_aside);
    auto s = collector::read_job_summary(m_dir / "bad.h5");
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->samples_received, 4u);
}

TEST_F(Hdf5SinkRobustnessTest, a_symlink_in_dir_is_never_followed)
{
    m_tree.write("outside.h5", "precious");
    m_tree.mkdir("out");
    std::filesystem::create_symlink(m_tree.path("outside.h5"), m_dir / "link.h5");
    auto sink = make_sink(options(m_dir));
    run_job(*sink, "link", 2);
    EXPECT_EQ(read_text(m_tree.path("outside.h5")), "precious");
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(m_dir / "link.h5")));
    EXPECT_EQ(sink->stats().files_quarantined, 1u);
}

TEST_F(Hdf5SinkRobustnessTest, a_file_of_another_job_is_left_alone)
{
    auto sink = make_sink(options(m_dir));
    run_job(*sink, "mine", 1);
    std::filesystem::rename(m_dir / "mine.h5", m_dir / "other.h5");
    sink->consume(message(MessageKind::sample, "other", "h", k_t0, {cpu_block(1, 1, 0)}), at(1000));
    EXPECT_EQ(sink->stats().messages_dropped, 1u);
    EXPECT_EQ(sink->stats().files_quarantined, 0u);
    auto s = collector::read_job_summary(m_dir / "other.h5");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->job_id, "mine");
}

TEST_F(Hdf5SinkRobustnessTest, an_unusable_directory_is_counted_never_thrown)
{
    auto sink = make_sink(options(m_dir));
    std::filesystem::remove_all(m_dir);
    m_tree.write("out", "a file where the directory was");
    const int64_t start = 1000 * k_second;
    for (int i = 0; i < 5; ++i)
        sink->consume(message(MessageKind::sample, "j", "h", k_t0 + i, {cpu_block(i, i, 0)}), at(start + i));
    sink->tick(start + 10 * k_second);
    sink->close_all();
    auto stats = sink->stats();
    EXPECT_GE(stats.write_errors, 1u);
    EXPECT_EQ(stats.messages_dropped, 5u);
    EXPECT_EQ(stats.files_opened, 0u);
    EXPECT_EQ(stats.rows_written, 0u);
    EXPECT_FALSE(collector::make_hdf5_sink(options(m_tree.path("out"))).ok());
}

}  // namespace
