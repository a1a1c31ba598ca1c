#include "node/backends/registry.hpp"

#include "node/backends/cgroup_cpu/CgroupCpuBackend.hpp"
#include "node/backends/cgroup_io/CgroupIoBackend.hpp"
#include "node/backends/cgroup_memory/CgroupMemoryBackend.hpp"
#include "node/backends/infiniband/InfinibandBackend.hpp"
#include "node/backends/lustre/LustreBackend.hpp"
#include "node/backends/processes/ProcessesBackend.hpp"
#include "node/backends/rapl/RaplBackend.hpp"
#include "node/backends/temperature/TemperatureBackend.hpp"

namespace colmet::node {

const std::vector<BackendFactory> &job_backends()
{
    static const std::vector<BackendFactory> k_table = {
        {"cgroup_cpu", "CPU time of the job's cgroup (usage, user, system) and CFS throttling",
         &backends::make_cgroup_cpu_backend},
        {"cgroup_memory", "Memory of the job's cgroup: current, peak, anonymous, page cache, major faults",
         &backends::make_cgroup_memory_backend},
        {"cgroup_io", "Block I/O of the job's cgroup summed over devices: bytes and operations",
         &backends::make_cgroup_io_backend},
        {"processes", "Processes and threads of the job, and their cumulative I/O from /proc/<pid>/io",
         &backends::make_processes_backend},
    };
    return k_table;
}

const BackendFactory *find_backend(std::string_view name)
{
    for (const auto &f : job_backends())
        if (f.name == name)
            return &f;
    return nullptr;
}

const std::vector<NodeBackendFactory> &node_backends()
{
    static const std::vector<NodeBackendFactory> k_table = {
        {"rapl", "--enable-RAPL",
         "Energy of each CPU package and RAPL domain (powercap, else the perf power PMU), cumulative J",
         &backends::rapl::make_rapl_backend},
        {"temperature", "--enable-temperature", "Temperatures of the thermal zones and hwmon sensors, degC",
         &backends::temperature::make_temperature_backend},
        {"infiniband", "--enable-infiniband", "InfiniBand/Omni-Path port counters: bytes and packets sent and received",
         &backends::infiniband::make_infiniband_backend},
        {"lustre", "--enable-lustre", "Lustre client statistics of each mount (llite stats): bytes and operations",
         &backends::lustre::make_lustre_backend},
    };
    return k_table;
}

const NodeBackendFactory *find_node_backend(std::string_view name)
{
    for (const auto &f : node_backends())
        if (f.name == name)
            return &f;
    return nullptr;
}

}  // namespace colmet::node
