// How colmet's metrics are named in a time-series store, after Prometheus'
// conventions: colmet_<backend>_<metric>[_<unit>][_total].
//
//   cgroup_cpu usage (s, counter)        colmet_cgroup_cpu_usage_seconds_total
//   cgroup_memory current (B, gauge)     colmet_cgroup_memory_current_bytes
//   rapl package_0 (J, counter)          colmet_rapl_package_0_joules_total
//   temperature cpu_0 (degC, gauge)      colmet_temperature_cpu_0_celsius
//   perfhw instructions (1, counter)     colmet_perfhw_count_total{event="instructions"}
//   perfhw task_clock (s, counter)       colmet_perfhw_seconds_total{event="task_clock"}
//   perfhw instructions.scaling (1)      colmet_perfhw_scaling_ratio{event="instructions"}
//
// perfhw's event names are a label, so that one query covers every event.
// Bytes outside [a-zA-Z0-9_] become '_'. InfluxDB line protocol gets the
// same names split in two: the measurement colmet_<backend> and the field
// <metric>[_<unit>][_total], which VictoriaMetrics, Telegraf's Prometheus
// output and InfluxDB's Flux joins back as measurement_field.
#pragma once

#include "wire/message.hpp"

#include <string>

namespace colmet::collector::tsdb {

struct SeriesName {
    std::string measurement;  // colmet_<backend>
    std::string field;        // <metric>[_<unit>][_total], or perfhw's count_total, seconds_total, scaling_ratio
    std::string event;        // perfhw's event name, gpu's GPU index, else empty
    // The label `event` is written under: "event" (perfhw) or "gpu". Both
    // sort between "cluster" and "host", where the encoders put it.
    std::string event_label = "event";
    std::string full() const { return measurement + "_" + field; }
};

SeriesName series_name(const std::string &backend, const wire::MetricDescriptor &metric);

// The unit's word in a name: s -> seconds, B -> bytes, J -> joules,
// W -> watts, degC -> celsius, 1 -> "" (none); another unit as it is,
// sanitised and lower-cased.
std::string unit_word(const std::string &unit);

}  // namespace colmet::collector::tsdb
