#include "NodeTestSupport.hpp"

#include "common/file_io.hpp"
#include "node/backends/rapl/RaplBackend.hpp"
#include "node/backends/rapl/RaplMapping.hpp"
#include "node/backends/support/MappingCsv.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace colmet;
using namespace colmet::node::backends::rapl;
using test::at;
using test::metric_names;
using test::take;

namespace {

const char *const k_zones = "sys/class/powercap/";

void set_energy(const test::FakeTree &tree, const std::string &zone, uint64_t uj)
{
    tree.write(std::string(k_zones) + zone + "/energy_uj", std::to_string(uj) + "\n");
}

}  // namespace

TEST(RaplBackendTest, intel_two_sockets_package_core_dram_in_joules)
{
    test::FakeTree tree;
    tree.copy_fixture("node/intel-2s");
    auto b = make_rapl(tree.path("sys"));
    ASSERT_TRUE(b) << b.error().message();
    auto &rapl = **b;
    EXPECT_EQ(rapl.name(), "rapl");
    EXPECT_EQ(rapl.scope(), wire::Scope::node);
    EXPECT_EQ(rapl.source(), Source::powercap);
    EXPECT_EQ(metric_names(rapl), (std::vector<std::string>{"package_0_package", "package_0_core", "package_0_dram",
                                                            "package_1_package", "package_1_core", "package_1_dram"}));
    for (const auto &m : rapl.metrics()) {
        EXPECT_EQ(m.unit, "J");
        EXPECT_EQ(m.kind, wire::MetricKind::counter);
    }
    EXPECT_EQ(rapl.open_problems(), "");
    // The baseline was read when the backend was built: nothing used yet.
    auto v = take(rapl);
    EXPECT_EQ(v, std::vector<double>(6, 0.0));
    EXPECT_EQ(rapl.status(), "");

    set_energy(tree, "intel-rapl:0", 123456789012 + 5'000'000);
    set_energy(tree, "intel-rapl:0:0", 45678901234 + 2'500'000);
    set_energy(tree, "intel-rapl:0:1", 9876543210 + 750'000);
    set_energy(tree, "intel-rapl:1", 223456789012 + 6'000'001);
    v = take(rapl);
    EXPECT_EQ(at(rapl, v, "package_0_package"), 5.0);
    EXPECT_EQ(at(rapl, v, "package_0_core"), 2.5);
    EXPECT_EQ(at(rapl, v, "package_0_dram"), 0.75);
    EXPECT_EQ(at(rapl, v, "package_1_package"), 6.000001);
    EXPECT_EQ(at(rapl, v, "package_1_core"), 0.0);
    EXPECT_EQ(at(rapl, v, "package_1_dram"), 0.0);
    // Cumulative: the next sample adds.
    set_energy(tree, "intel-rapl:0", 123456789012 + 7'000'000);
    v = take(rapl);
    EXPECT_EQ(at(rapl, v, "package_0_package"), 7.0);
}

TEST(RaplBackendTest, a_counter_wrap_between_two_samples_adds_the_max_range)
{
    test::FakeTree tree;
    tree.copy_fixture("node/intel-2s");
    const uint64_t max = 262143328850;
    set_energy(tree, "intel-rapl:0", max - 1'000'000);
    auto b = make_rapl(tree.path("sys"));
    ASSERT_TRUE(b) << b.error().message();
    set_energy(tree, "intel-rapl:0", 2'000'000);  // wrapped: 1 J to the top, then 2 J
    auto v = take(**b);
    EXPECT_EQ(at(**b, v, "package_0_package"), 3.0);
    EXPECT_EQ((*b)->status(), "");
    set_energy(tree, "intel-rapl:0", 3'500'000);
    v = take(**b);
    EXPECT_EQ(at(**b, v, "package_0_package"), 4.5);
    // dram has its own, smaller range.
    set_energy(tree, "intel-rapl:1:1", 1'000'000);  // below the fixture's 19876543210: wrapped
    v = take(**b);
    EXPECT_DOUBLE_EQ(at(**b, v, "package_1_dram"), (65712999613.0 - 19876543210.0 + 1'000'000.0) * 1e-6);
}

TEST(RaplBackendTest, amd_package_and_core)
{
    test::FakeTree tree;
    tree.copy_fixture("node/amd");
    auto b = make_rapl(tree.path("sys"));
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(metric_names(**b), (std::vector<std::string>{"package_0_package", "package_0_core"}));
    set_energy(tree, "intel-rapl:0", 8765432109 + 1'234'567);
    set_energy(tree, "intel-rapl:0:0", 1234567890 + 1'000);
    auto v = take(**b);
    EXPECT_EQ(v, (std::vector<double>{1.234567, 0.001}));
    EXPECT_EQ(rapl_mapping_csv((*b)->domains()), "counter_1,energy_microjoule,package-0,zone_package\n"
                                                 "counter_2,max_energy_range_microjoule,package-0,zone_package\n"
                                                 "counter_3,energy_microjoule,package-0,zone_core\n"
                                                 "counter_4,max_energy_range_microjoule,package-0,zone_core\n"
                                                 "counter_5,counter_not_supported_by_hardware,,\n"
                                                 "counter_6,counter_not_supported_by_hardware,,\n"
                                                 "counter_7,no_counter,,\n"
                                                 "counter_8,no_counter,,\n"
                                                 "counter_9,no_counter,,\n"
                                                 "counter_10,no_counter,,\n"
                                                 "counter_11,no_counter,,\n"
                                                 "counter_12,no_counter,,\n"
                                                 "counter_13,no_counter,,\n"
                                                 "counter_14,no_counter,,\n"
                                                 "counter_15,no_counter,,\n"
                                                 "counter_16,no_counter,,\n"
                                                 "counter_17,no_counter,,\n"
                                                 "counter_18,no_counter,,\n"
                                                 "counter_19,no_counter,,\n"
                                                 "counter_20,no_counter,,\n"
                                                 "counter_21,no_counter,,\n"
                                                 "counter_22,no_counter,,\n"
                                                 "counter_23,no_counter,,\n"
                                                 "counter_24,no_counter,,\n");
}

TEST(RaplBackendTest, mapping_file_of_the_intel_machine_byte_for_byte)
{
    test::FakeTree tree;
    tree.copy_fixture("node/intel-2s");
    auto b = make_rapl(tree.path("sys"));
    ASSERT_TRUE(b) << b.error().message();
    auto path = node::backends::write_mapping_file(tree.root(), "RAPL_mapping", 1'764'678'000'123'456'789,
                                                   rapl_mapping_csv((*b)->domains()));
    ASSERT_TRUE(path) << path.error().message();
    EXPECT_EQ(path->filename(), "RAPL_mapping.1764678000.123456.csv");
    std::string expected = "counter_1,energy_microjoule,package-0,zone_package\n"
                           "counter_2,max_energy_range_microjoule,package-0,zone_package\n"
                           "counter_3,energy_microjoule,package-0,zone_core\n"
                           "counter_4,max_energy_range_microjoule,package-0,zone_core\n"
                           "counter_5,energy_microjoule,package-0,zone_dram\n"
                           "counter_6,max_energy_range_microjoule,package-0,zone_dram\n"
                           "counter_7,energy_microjoule,package-1,zone_package\n"
                           "counter_8,max_energy_range_microjoule,package-1,zone_package\n"
                           "counter_9,energy_microjoule,package-1,zone_core\n"
                           "counter_10,max_energy_range_microjoule,package-1,zone_core\n"
                           "counter_11,energy_microjoule,package-1,zone_dram\n"
                           "counter_12,max_energy_range_microjoule,package-1,zone_dram\n";
    for (int n = 13; n <= 24; ++n)
        expected += "counter_" + std::to_string(n) + ",no_counter,,\n";
    EXPECT_EQ(test::slurp(*path), expected);
    // Never overwritten.
    EXPECT_FALSE(node::backends::write_mapping_file(tree.root(), "RAPL_mapping", 1'764'678'000'123'456'789, "x"));
}

TEST(RaplBackendTest, a_missing_domain_has_no_metric_and_is_unsupported_in_the_mapping)
{
    test::FakeTree tree;
    tree.copy_fixture("node/intel-2s");
    std::filesystem::remove_all(tree.path("sys/class/powercap/intel-rapl:1:1"));  // package-1 without dram
    auto b = make_rapl(tree.path("sys"));
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(metric_names(**b), (std::vector<std::string>{"package_0_package", "package_0_core", "package_0_dram",
                                                           "package_1_package", "package_1_core"}));
    auto csv = rapl_mapping_csv((*b)->domains());
    EXPECT_NE(csv.find("counter_10,max_energy_range_microjoule,package-1,zone_core\n"
                       "counter_11,counter_not_supported_by_hardware,,\n"
                       "counter_12,counter_not_supported_by_hardware,,\n"
                       "counter_13,no_counter,,\n"),
              std::string::npos)
        << csv;
}

TEST(RaplBackendTest, uncore_and_psys_follow_the_original_columns)
{
    test::FakeTree tree;
    tree.write("sys/class/powercap/intel-rapl:0/name", "package-0\n");
    tree.write("sys/class/powercap/intel-rapl:0/energy_uj", "10\n");
    tree.write("sys/class/powercap/intel-rapl:0:0/name", "core\n");
    tree.write("sys/class/powercap/intel-rapl:0:0/energy_uj", "10\n");
    tree.write("sys/class/powercap/intel-rapl:0:1/name", "uncore\n");
    tree.write("sys/class/powercap/intel-rapl:0:1/energy_uj", "10\n");
    tree.write("sys/class/powercap/intel-rapl:1/name", "psys\n");
    tree.write("sys/class/powercap/intel-rapl:1/energy_uj", "10\n");
    auto b = make_rapl(tree.path("sys"));
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(metric_names(**b),
              (std::vector<std::string>{"package_0_package", "package_0_core", "package_0_uncore", "psys"}));
    auto csv = rapl_mapping_csv((*b)->domains());
    EXPECT_EQ(csv.substr(0, csv.find("counter_11,")), "counter_1,energy_microjoule,package-0,zone_package\n"
                                                      "counter_2,max_energy_range_microjoule,package-0,zone_package\n"
                                                      "counter_3,energy_microjoule,package-0,zone_core\n"
                                                      "counter_4,max_energy_range_microjoule,package-0,zone_core\n"
                                                      "counter_5,counter_not_supported_by_hardware,,\n"
                                                      "counter_6,counter_not_supported_by_hardware,,\n"
                                                      "counter_7,energy_microjoule,package-0,zone_uncore\n"
                                                      "counter_8,max_energy_range_microjoule,package-0,zone_uncore\n"
                                                      "counter_9,energy_microjoule,psys,zone_psys\n"
                                                      "counter_10,max_energy_range_microjoule,psys,zone_psys\n");
}

// Root bypasses file modes, so the permission path is tested twice: here by
// injecting EACCES into the open of energy_uj, and below for real in a child
// process that gives up root.
TEST(RaplBackendTest, unreadable_energy_uj_is_a_permission_status_with_nan_values)
{
    test::FakeTree tree;
    tree.copy_fixture("node/intel-2s");
    RaplIo io;
    io.open_file = &test::deny_energy;
    auto b = make_rapl(tree.path("sys"), io);
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ((*b)->metrics().size(), 6u);
    EXPECT_EQ((*b)->open_problems(), "permission: energy_uj is readable by root only (Linux >= 5.10); 6 of 6 "
                                     "domains are NaN");
    auto v = take(**b);
    for (double x : v)
        EXPECT_TRUE(std::isnan(x));  // never 0
    EXPECT_EQ((*b)->status(), "permission: energy_uj is readable by root only (Linux >= 5.10); 6 domains NaN");
    EXPECT_EQ((*b)->failed_samples(), 1u);
}

TEST(RaplBackendTest, unreadable_energy_uj_for_a_real_non_root_process)
{
    if (!test::is_root())
        GTEST_SKIP() << "needs root to make root-only files and then drop to an unprivileged uid";
    test::FakeTree tree;
    tree.copy_fixture("node/intel-2s");
    // The tree readable by everyone except energy_uj (mode 0400, root), as on Linux >= 5.10.
    std::filesystem::permissions(tree.root(), std::filesystem::perms(0755));
    for (const auto &e : std::filesystem::recursive_directory_iterator(tree.root()))
        std::filesystem::permissions(e.path(), std::filesystem::perms(e.is_directory() ? 0755 : 0444));
    for (const auto &e : std::filesystem::recursive_directory_iterator(tree.root()))
        if (e.path().filename() == "energy_uj")
            std::filesystem::permissions(e.path(), std::filesystem::perms(0400));
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // nobody: exit 10 + step on a failed expectation, 0 when all hold.
        if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            _exit(99);
        auto b = make_rapl(tree.path("sys"));
        if (!b)
            _exit(10);
        if ((*b)->metrics().size() != 6)
            _exit(11);
        std::vector<double> v(6, 0.0);
        (*b)->sample(v);
        for (double x : v)
            if (!std::isnan(x))
                _exit(12);
        if ((*b)->status().find("permission: energy_uj is readable by root only") != 0)
            _exit(13);
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 99)
        GTEST_SKIP() << "could not switch to uid 65534";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "step that failed: 10 make, 11 metrics, 12 NaN, 13 status";
}

namespace {

// Fake perf counters: a memfd holding config * 1e9 as the count.
int fake_perf_open(uint32_t type, uint64_t config, int cpu)
{
    if (type != 11)
        return -EINVAL;
    int fd = memfd_create("perf", MFD_CLOEXEC);
    uint64_t count = config * 1'000'000'000ULL + static_cast<uint64_t>(cpu);
    if (fd < 0 || pwrite(fd, &count, sizeof count, 0) != sizeof count)
        return -EIO;
    return fd;
}

int refused_perf_open(uint32_t, uint64_t, int) { return -EACCES; }

void power_pmu(const test::FakeTree &tree)
{
    tree.copy_fixture("perfhw/sys/bus/event_source/devices/power", "sys/bus/event_source/devices/power");
    tree.write("sys/bus/event_source/devices/power/cpumask", "0,18\n");
    tree.write("sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
    tree.write("sys/devices/system/cpu/cpu18/topology/physical_package_id", "1\n");
}

}  // namespace

TEST(RaplBackendTest, the_perf_power_pmu_when_powercap_is_absent)
{
    test::FakeTree tree;
    power_pmu(tree);
    RaplIo io;
    io.perf_open = &fake_perf_open;
    io.perf_read = &test::memfd_perf_read;
    auto b = make_rapl(tree.path("sys"), io);
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ((*b)->source(), Source::perf);
    EXPECT_EQ(metric_names(**b), (std::vector<std::string>{"package_0_package", "package_0_core", "package_0_dram",
                                                           "package_1_package", "package_1_core", "package_1_dram"}));
    auto v = take(**b);
    const double scale = 2.3283064365386962890625e-10;
    // energy-pkg is event 0x02, energy-cores 0x01, energy-ram 0x03; the fake counts config * 1e9 + cpu.
    EXPECT_EQ(at(**b, v, "package_0_package"), 2'000'000'000.0 * scale);
    EXPECT_EQ(at(**b, v, "package_0_core"), 1'000'000'000.0 * scale);
    EXPECT_EQ(at(**b, v, "package_1_dram"), 3'000'000'018.0 * scale);
    EXPECT_EQ((*b)->status(), "");
    EXPECT_EQ((*b)->metrics()[0].unit, "J");
}

TEST(RaplBackendTest, perf_psys_is_counted_once_after_the_packages)
{
    test::FakeTree tree;
    power_pmu(tree);
    tree.write("sys/bus/event_source/devices/power/events/energy-psys", "event=0x05\n");
    tree.write("sys/bus/event_source/devices/power/events/energy-psys.scale", "2.3283064365386962890625e-10\n");
    tree.write("sys/bus/event_source/devices/power/events/energy-psys.unit", "Joules\n");
    RaplIo io;
    io.perf_open = &fake_perf_open;
    io.perf_read = &test::memfd_perf_read;
    auto b = make_rapl(tree.path("sys"), io);
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(metric_names(**b),
              (std::vector<std::string>{"package_0_package", "package_0_core", "package_0_dram", "package_1_package",
                                        "package_1_core", "package_1_dram", "psys"}));
    auto v = take(**b);
    EXPECT_EQ(at(**b, v, "psys"), 5'000'000'000.0 * 2.3283064365386962890625e-10);  // on CPU 0
    auto csv = rapl_mapping_csv((*b)->domains());
    EXPECT_NE(csv.find("counter_12,max_energy_range_microjoule,package-1,zone_dram\n"
                       "counter_13,energy_microjoule,psys,zone_psys\n"
                       "counter_14,max_energy_range_microjoule,psys,zone_psys\n"
                       "counter_15,no_counter,,\n"),
              std::string::npos)
        << csv;
}

TEST(RaplBackendTest, perf_power_events_that_cannot_be_opened_make_the_backend_unavailable)
{
    test::FakeTree tree;
    power_pmu(tree);
    RaplIo io;
    io.perf_open = &refused_perf_open;
    auto b = make_rapl(tree.path("sys"), io);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().code(), Errc::unsupported);
    EXPECT_NE(b.error().message().find("permission: perf power events need root or CAP_PERFMON"), std::string::npos)
        << b.error().message();
}

TEST(RaplBackendTest, neither_powercap_nor_power_pmu_is_not_found)
{
    test::FakeTree tree;
    tree.mkdir("sys/class/powercap");
    auto b = make_rapl(tree.path("sys"));
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().code(), Errc::not_found);
    EXPECT_EQ(b.error().message(), "no RAPL zones in " + tree.path("sys/class/powercap").string() +
                                       " and no perf power PMU in " +
                                       tree.path("sys/bus/event_source/devices/power").string());
}
