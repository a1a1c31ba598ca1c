#include "node/backends/temperature/TemperatureBackend.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/MappingCsv.hpp"
#include "node/backends/support/sysfs_names.hpp"

#include <limits>
#include <map>
#include <system_error>

namespace colmet::node::backends::temperature {
namespace {

void thermal_zones(const std::filesystem::path &sysfs_root, std::vector<Sensor> &out)
{
    const auto dir = sysfs_root / "class/thermal";
    for (const auto &zone : numbered_entries(dir, "thermal_zone")) {
        auto type = read_trimmed(dir / zone.name / "type");
        out.push_back({metric_part(type ? *type : std::string("thermal_zone")) + "_" + std::to_string(zone.number),
                       dir / zone.name / "temp"});
    }
}

void hwmon_chips(const std::filesystem::path &sysfs_root, std::vector<Sensor> &out)
{
    const auto dir = sysfs_root / "class/hwmon";
    struct Chip {
        std::string name;
        std::filesystem::path files;  // where temp*_input live
        std::vector<NumberedEntry> inputs;
    };
    std::vector<Chip> chips;
    std::map<std::string, int> uses;
    for (const auto &hwmon : numbered_entries(dir, "hwmon")) {
        Chip chip;
        chip.files = dir / hwmon.name;
        chip.inputs = numbered_entries(chip.files, "temp", "_input");
        if (chip.inputs.empty()) {  // drivers of the old style keep their files under device/
            chip.files /= "device";
            chip.inputs = numbered_entries(chip.files, "temp", "_input");
        }
        if (chip.inputs.empty())
            continue;
        auto name = read_trimmed(dir / hwmon.name / "name");
        if (!name)
            name = read_trimmed(chip.files / "name");
        chip.name = metric_part(name ? *name : hwmon.name);
        ++uses[chip.name];
        chips.push_back(std::move(chip));
    }
    std::map<std::string, int> seen;
    for (const auto &chip : chips) {
        std::string prefix = chip.name;
        if (uses[chip.name] > 1)
            prefix += std::to_string(seen[chip.name]++);
        for (const auto &input : chip.inputs) {
            std::string k = std::to_string(input.number);
            auto label = read_trimmed(chip.files / ("temp" + k + "_label"));
            std::string sensor = label && !label->empty() ? metric_part(*label) : "temp" + k;
            std::string metric = prefix;
            metric += '.';
            metric += sensor;
            out.push_back({std::move(metric), chip.files / input.name});
        }
    }
}

}  // namespace

std::vector<Sensor> find_sensors(const std::filesystem::path &sysfs_root)
{
    std::vector<Sensor> out;
    thermal_zones(sysfs_root, out);
    hwmon_chips(sysfs_root, out);
    // Two sensors with one name (two labels that differ only in punctuation): number the later ones.
    std::map<std::string, int> seen;
    for (auto &s : out)
        if (int n = seen[s.metric]++; n > 0)
            s.metric += "_" + std::to_string(n);
    return out;
}

TemperatureBackend::TemperatureBackend(std::vector<Sensor> sensors) : m_sensors(std::move(sensors))
{
    for (const auto &s : m_sensors) {
        m_metrics.push_back({s.metric, "degC", wire::MetricKind::gauge});
        m_files.emplace_back(s.file);
    }
}

void TemperatureBackend::sample(std::span<double> values) noexcept
{
    m_problems.clear();
    for (size_t i = 0; i < m_files.size() && i < values.size(); ++i) {
        auto milli = m_files[i].read_i64();
        if (milli) {
            values[i] = static_cast<double>(*milli) / 1000.0;
        } else {
            values[i] = std::numeric_limits<double>::quiet_NaN();
            m_problems.item(m_sensors[i].metric).add(": ").add(errno_text(m_files[i].error()));
        }
    }
    set_status(m_problems.view());
}

std::string temperature_mapping_csv(const std::vector<wire::MetricDescriptor> &metrics)
{
    std::string out;
    size_t i = 0;
    for (; i < metrics.size(); ++i)
        out += "counter_" + std::to_string(i + 1) + ", " + metrics[i].name + "\n";
    for (; i < 6; ++i)
        out += "counter_" + std::to_string(i + 1) + ", no counter \n";
    return out;
}

Result<std::unique_ptr<MetricBackend>> make_temperature_backend(const NodeContext &ctx)
{
    auto sensors = find_sensors(ctx.sysfs_root);
    if (sensors.empty())
        return Error(Errc::not_found, "no thermal zone in " + (ctx.sysfs_root / "class/thermal").string() +
                                          " and no temperature input in " + (ctx.sysfs_root / "class/hwmon").string());
    return std::unique_ptr<MetricBackend>(std::make_unique<TemperatureBackend>(std::move(sensors)));
}

}  // namespace colmet::node::backends::temperature

namespace colmet::node::backends {
namespace {

// The original's temperature_mapping file: what each column holds.
void after_temperature_start(const MetricBackend &backend, const std::string &mapping_dir, int64_t now_ns)
{
    write_mapping_logged(mapping_dir, "temperature_mapping", now_ns,
                         temperature::temperature_mapping_csv(backend.metrics()));
}

}  // namespace

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_temperature_factory;
constexpr BackendFactory k_temperature_factory = node_backend_factory(
    *spec::backend_info("temperature"), &temperature::make_temperature_backend, &after_temperature_start);

}  // namespace colmet::node::backends
