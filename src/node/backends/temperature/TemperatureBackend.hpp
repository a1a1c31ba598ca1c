// Backend "temperature" (scope node): every temperature sensor of the node,
// in degrees Celsius (unit "degC", gauge; the kernel's millidegrees / 1000,
// not truncated).
//  - <sysfs>/class/thermal/thermal_zone<N>/temp, named "<type>_<N>" after
//    the zone's type file as the original colmet did ("x86_pkg_temp_1",
//    "acpitz_0");
//  - <sysfs>/class/hwmon/hwmon<N>/temp<K>_input (or under hwmon<N>/device/
//    for old drivers), named "<chip>.<label>" after the chip's name file and
//    temp<K>_label ("coretemp.package_id_0", "nvme.composite"), or
//    "<chip>.temp<K>" without a label. Chips that share a name are numbered
//    in hwmon order ("coretemp0.core_0", "coretemp1.core_0").
// A sensor that cannot be read (some report ENODATA while powered down) is
// NaN with its reason in the status.
#pragma once

#include "common/result.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "node/backends/support/NumberFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::backends::temperature {

struct Sensor {
    std::string metric;
    std::filesystem::path file;  // the millidegree file
};

// The sensors in order: thermal zones by number, then hwmon chips by number
// and their inputs by number. Empty when there is none.
std::vector<Sensor> find_sensors(const std::filesystem::path &sysfs_root);

class TemperatureBackend final : public MetricBackend {
public:
    explicit TemperatureBackend(std::vector<Sensor> sensors);

    std::string_view name() const override { return "temperature"; }
    wire::Scope scope() const override { return wire::Scope::node; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override;

private:
    std::vector<Sensor> m_sensors;
    std::vector<wire::MetricDescriptor> m_metrics;
    std::vector<NumberFile> m_files;
    StatusText m_problems;
};

// temperature_mapping.<time>.csv as the original wrote it (legacy-colmet.md
// §6.3): "counter_<i>, <name>" per metric (note the space), and at least the
// original's 6 lines, padded with "counter_<i>, no counter ".
std::string temperature_mapping_csv(const std::vector<wire::MetricDescriptor> &metrics);

// Fails with Errc::not_found when the node has no thermal zone and no hwmon
// temperature input.
Result<std::unique_ptr<MetricBackend>> make_temperature_backend(const NodeContext &ctx);

}  // namespace colmet::node::backends::temperature
