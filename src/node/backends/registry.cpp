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

namespace {

// Each factory's row of the catalog, found at compile time: a name the
// catalog lacks does not compile (a null pointer is no constant).
constexpr const BackendInfo &k_cgroup_cpu = *backend_info("cgroup_cpu");
constexpr const BackendInfo &k_cgroup_memory = *backend_info("cgroup_memory");
constexpr const BackendInfo &k_cgroup_io = *backend_info("cgroup_io");
constexpr const BackendInfo &k_processes = *backend_info("processes");
constexpr const BackendInfo &k_rapl = *backend_info("rapl");
constexpr const BackendInfo &k_temperature = *backend_info("temperature");
constexpr const BackendInfo &k_infiniband = *backend_info("infiniband");
constexpr const BackendInfo &k_lustre = *backend_info("lustre");

BackendFactory job_factory(const BackendInfo &row, Result<std::unique_ptr<MetricBackend>> (*make)(const JobContext &))
{
    return {row.name, row.description, make};
}

NodeBackendFactory node_factory(const BackendInfo &row,
                                Result<std::unique_ptr<MetricBackend>> (*make)(const NodeContext &))
{
    return {row.name, row.flag, row.description, make};
}

}  // namespace

const std::vector<BackendFactory> &job_backends()
{
    static const std::vector<BackendFactory> k_table = {
        job_factory(k_cgroup_cpu, &backends::make_cgroup_cpu_backend),
        job_factory(k_cgroup_memory, &backends::make_cgroup_memory_backend),
        job_factory(k_cgroup_io, &backends::make_cgroup_io_backend),
        job_factory(k_processes, &backends::make_processes_backend),
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
        node_factory(k_rapl, &backends::rapl::make_rapl_backend),
        node_factory(k_temperature, &backends::temperature::make_temperature_backend),
        node_factory(k_infiniband, &backends::infiniband::make_infiniband_backend),
        node_factory(k_lustre, &backends::lustre::make_lustre_backend),
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
