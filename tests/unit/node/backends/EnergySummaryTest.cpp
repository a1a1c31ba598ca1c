// colmet-job's summary prints the RAPL energy of the job file in J and kWh.
#include "../../collector/sinks/hdf5/Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "common/names.hpp"
#include "job/Summary.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

BackendBlock rapl_block(double pkg, double dram)
{
    return block("rapl",
                 {{"package_0_package", "J", MetricKind::counter}, {"package_0_dram", "J", MetricKind::counter}},
                 {pkg, dram}, wire::Scope::node);
}

// What print_summary() writes to stderr.
std::string printed_summary(const std::filesystem::path &file)
{
    std::fflush(stderr);
    int saved = dup(2);
    FILE *tmp = std::tmpfile();
    dup2(fileno(tmp), 2);
    job::print_summary("e1", file, 0, 60, "");
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string text;
    std::rewind(tmp);
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, tmp))
        text.append(buf, n);
    std::fclose(tmp);
    return text;
}

}  // namespace

TEST(EnergySummaryTest, joules_and_kilowatt_hours)
{
    EXPECT_EQ(job::human_energy(5400), "5400.0 J = 0.001500 kWh");
    EXPECT_EQ(job::human_energy(k_nan), "unknown");
}

TEST(EnergySummaryTest, the_summary_shows_the_energy_of_a_job_with_rapl_and_none_without)
{
    test::FakeTree tree;
    auto sink = make_sink(options(tree.path("out")));
    auto start = job_start("e1", "node-1", k_t0, "2");
    start.backends = {rapl_block(0.5, 0.1)};
    sink->consume(start, at(1));
    sink->consume(message(MessageKind::sample, "e1", "node-1", k_t0 + 30 * k_second, {rapl_block(3000.5, 300.1)}),
                  at(2));
    sink->consume(message(MessageKind::job_end, "e1", "node-1", k_t0 + 60 * k_second, {rapl_block(5000.5, 400.1)}),
                  at(3));
    sink->consume(job_start("e2", "node-1", k_t0, "2"), at(4));
    sink->consume(message(MessageKind::job_end, "e2", "node-1", k_t0 + 60 * k_second, {cpu_block(1, 1, 0)}), at(5));
    sink->close_all();

    auto text = printed_summary(job_file(tree.path("out"), "e1", JobFile::summary));
    EXPECT_NE(text.find("  energy          5400.0 J = 0.001500 kWh (RAPL package + DRAM of the node, over 60.00 s)\n"),
              std::string::npos)
        << text;
    text = printed_summary(job_file(tree.path("out"), "e2", JobFile::summary));
    EXPECT_EQ(text.find("energy"), std::string::npos) << text;
    EXPECT_NE(text.find("samples         2 received"), std::string::npos) << text;
}
