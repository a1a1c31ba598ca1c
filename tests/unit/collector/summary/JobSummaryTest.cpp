// The summary's JSON (what on-job-end commands read and the HDF5 sink leaves
// beside each file) read back by parse_summary_json and read_summary_file,
// which colmet-job uses instead of HDF5.
#include "collector/summary/JobSummary.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace colmet::collector {
namespace {

JobSummary full_summary()
{
    JobSummary s;
    s.job_id = "42.batch \"quoted\"";
    s.file = "/var/lib/colmet/42.batch.h5";
    s.duration_s = 61.5;
    s.cpu_time_s = 120.25;
    s.user_time_s = 100;
    s.system_time_s = 20.25;
    s.cpus = 2;
    s.cpu_efficiency = 0.97;
    s.peak_memory_bytes = 3.5e9;
    s.read_bytes = 1024;
    s.write_bytes = 2048;
    s.read_chars = 4096;
    s.write_chars = 8192;
    s.energy_j = 5400;
    s.job_energy_j = 2700;
    s.samples_received = 62;
    s.samples_lost = 1;
    s.rows_dropped = 2;
    s.tsdb_points_dropped = 3;
    s.hosts = 2;
    s.hosts_without_job_end = 1;
    s.started_ns = 1'700'000'000'000'000'000;
    s.ended_ns = 1'700'000'061'500'000'000;
    s.cgroup_warning = "node1: the unified directory holds none of the job's processes";
    s.flags = {{"low_cpu_efficiency", "CPU efficiency 3 % over 600 s", 1'700'000'010'000'000'000},
               {"memory_unused", "peak 1 % of 4096 MiB", 1'700'000'061'000'000'000}};
    return s;
}

TEST(JobSummaryJson, every_field_survives_the_round_trip)
{
    const JobSummary s = full_summary();
    auto back = parse_summary_json(summary_json(s, "alice"));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->job_id, s.job_id);
    EXPECT_EQ(back->file, s.file);
    for (const auto &f : k_summary_f64)
        EXPECT_DOUBLE_EQ(back.value().*f.field, s.*f.field) << f.name;
    for (const auto &f : k_summary_u64)
        EXPECT_EQ(back.value().*f.field, s.*f.field) << f.name;
    for (const auto &f : k_summary_i64)
        EXPECT_EQ(back.value().*f.field, s.*f.field) << f.name;
    EXPECT_EQ(back->cgroup_warning, s.cgroup_warning);
    EXPECT_EQ(back->flags, s.flags);
}

TEST(JobSummaryJson, unknown_numbers_stay_unknown)
{
    JobSummary s;
    s.job_id = "7";
    auto back = parse_summary_json(summary_json(s, ""));
    ASSERT_TRUE(back.ok()) << back.error().message();
    for (const auto &f : k_summary_f64)
        EXPECT_TRUE(std::isnan(back.value().*f.field)) << f.name << " is null in the JSON, NaN when read";
    EXPECT_TRUE(back->flags.empty());
    EXPECT_TRUE(back->file.empty());
}

TEST(JobSummaryJson, what_is_not_a_summary_is_refused_with_the_reason)
{
    const std::vector<std::pair<std::string, std::string>> bad{
        {"", "not a JSON object"},
        {"[1, 2]", "not a JSON object"},
        {"{\"job_id\": \"1\", \"summary\": ", "not a JSON object"},
        {"{}", "no job_id"},
        {"{\"job_id\": 5}", "no job_id"},
        {"{\"job_id\": \"1\", \"summary\": [1]}", "summary is not an object"},
        {"{\"job_id\": \"1\", \"flags\": {}}", "flags is not a list"},
        {"{\"job_id\": \"1\", \"flags\": [3]}", "a flag is not an object"},
        {"{\"job_id\": \"1\", \"flags\": [{\"text\": \"x\"}]}", "a flag has no name"},
    };
    for (const auto &[text, why] : bad) {
        auto r = parse_summary_json(text);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_EQ(r.error().code(), Errc::invalid) << text;
        EXPECT_NE(r.error().message().find(why), std::string::npos) << text << ": " << r.error().message();
    }
}

TEST(JobSummaryJson, values_of_the_wrong_type_are_left_unknown)
{
    auto r = parse_summary_json(R"({"job_id": "1", "summary": {"cpu_time_s": "12", "hosts": -3,
                                     "started_ns": 1.5, "duration_s": 9}, "cgroup_warning": 4})");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(std::isnan(r->cpu_time_s));
    EXPECT_EQ(r->hosts, 0u);
    EXPECT_EQ(r->started_ns, 0);
    EXPECT_DOUBLE_EQ(r->duration_s, 9);
    EXPECT_TRUE(r->cgroup_warning.empty());
}

TEST(JobSummaryFile, a_missing_file_is_not_found_and_a_bad_one_names_its_path)
{
    test::FakeTree tree;
    auto missing = read_summary_file(tree.path("1.json"));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code(), Errc::not_found);
    EXPECT_NE(missing.error().message().find("has not ended"), std::string::npos) << missing.error().message();

    tree.write("2.json", "{\"job_id\": ");
    auto bad = read_summary_file(tree.path("2.json"));
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), Errc::invalid);
    EXPECT_NE(bad.error().message().find(tree.path("2.json").string()), std::string::npos) << bad.error().message();

    tree.write("3.json", summary_json(full_summary(), "bob"));
    auto good = read_summary_file(tree.path("3.json"));
    ASSERT_TRUE(good.ok()) << good.error().message();
    EXPECT_EQ(good->job_id, full_summary().job_id);
}

}  // namespace
}  // namespace colmet::collector
