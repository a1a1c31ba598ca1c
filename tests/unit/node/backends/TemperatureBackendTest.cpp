#include "NodeTestSupport.hpp"

#include "node/backends/support/MappingCsv.hpp"
#include "node/backends/temperature/TemperatureBackend.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace colmet;
using namespace colmet::node::backends::temperature;
using test::metric_names;
using test::take;

TEST(TemperatureBackendTest, thermal_zones_and_hwmon_sensors_with_labels_in_degrees_celsius)
{
    test::FakeTree tree;
    tree.copy_fixture("node/thermal");
    auto b = make_temperature_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ((*b)->name(), "temperature");
    EXPECT_EQ((*b)->scope(), wire::Scope::node);
    EXPECT_EQ(metric_names(**b),
              (std::vector<std::string>{"acpitz_0", "x86_pkg_temp_1", "pch_cannonlake_10", "acpitz.temp1",
                                        "coretemp0.package_id_0", "coretemp0.core_0", "coretemp1.package_id_1",
                                        "coretemp1.core_0", "nvme.composite", "nvme.sensor_1"}));
    for (const auto &m : (*b)->metrics()) {
        EXPECT_EQ(m.unit, "degC");
        EXPECT_EQ(m.kind, wire::MetricKind::gauge);
    }
    EXPECT_EQ(take(**b), (std::vector<double>{27.8, 45.0, 51.5, 27.8, 45.0, 43.0, 47.0, 44.0, 38.85, -1.5}));
    EXPECT_EQ((*b)->status(), "");
}

TEST(TemperatureBackendTest, an_unreadable_sensor_is_nan_with_its_reason)
{
    test::FakeTree tree;
    tree.copy_fixture("node/thermal");
    auto b = make_temperature_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    tree.write("sys/class/thermal/thermal_zone1/temp", "not a number\n");
    auto v = take(**b);
    EXPECT_EQ(v[0], 27.8);
    EXPECT_TRUE(std::isnan(v[1]));
    EXPECT_EQ(v[2], 51.5);
    EXPECT_EQ((*b)->status(), "x86_pkg_temp_1: Invalid argument");
}

TEST(TemperatureBackendTest, mapping_file_byte_for_byte)
{
    test::FakeTree tree;
    tree.copy_fixture("node/thermal");
    auto b = make_temperature_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    auto path = node::backends::write_mapping_file(tree.root(), "temperature_mapping", 1'764'678'000'000'001'000,
                                                   temperature_mapping_csv((*b)->metrics()));
    ASSERT_TRUE(path) << path.error().message();
    EXPECT_EQ(path->filename(), "temperature_mapping.1764678000.000001.csv");
    EXPECT_EQ(test::slurp(*path), "counter_1, acpitz_0\n"
                                  "counter_2, x86_pkg_temp_1\n"
                                  "counter_3, pch_cannonlake_10\n"
                                  "counter_4, acpitz.temp1\n"
                                  "counter_5, coretemp0.package_id_0\n"
                                  "counter_6, coretemp0.core_0\n"
                                  "counter_7, coretemp1.package_id_1\n"
                                  "counter_8, coretemp1.core_0\n"
                                  "counter_9, nvme.composite\n"
                                  "counter_10, nvme.sensor_1\n");
}

TEST(TemperatureBackendTest, mapping_file_pads_to_the_original_six_columns)
{
    test::FakeTree tree;
    tree.write("sys/class/thermal/thermal_zone0/type", "acpitz\n");
    tree.write("sys/class/thermal/thermal_zone0/temp", "30000\n");
    auto b = make_temperature_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(temperature_mapping_csv((*b)->metrics()), "counter_1, acpitz_0\n"
                                                        "counter_2, no counter \n"
                                                        "counter_3, no counter \n"
                                                        "counter_4, no counter \n"
                                                        "counter_5, no counter \n"
                                                        "counter_6, no counter \n");
}

TEST(TemperatureBackendTest, old_style_hwmon_files_under_device)
{
    test::FakeTree tree;
    tree.write("sys/class/hwmon/hwmon0/device/name", "it8728\n");
    tree.write("sys/class/hwmon/hwmon0/device/temp1_input", "35000\n");
    auto b = make_temperature_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(metric_names(**b), std::vector<std::string>{"it8728.temp1"});
    EXPECT_EQ(take(**b), std::vector<double>{35.0});
}

TEST(TemperatureBackendTest, no_sensor_is_not_found)
{
    test::FakeTree tree;
    tree.mkdir("sys/class/thermal");
    tree.write("sys/class/hwmon/hwmon0/name", "eth0\n");
    auto b = make_temperature_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().code(), Errc::not_found);
    EXPECT_EQ(b.error().message(), "no thermal zone in " + tree.path("sys/class/thermal").string() +
                                       " and no temperature input in " + tree.path("sys/class/hwmon").string());
}
