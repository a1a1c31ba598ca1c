#include "node/backends/registry.hpp"

#include "node/backends/cgroup_cpu/CgroupCpuBackend.hpp"
#include "node/backends/cgroup_io/CgroupIoBackend.hpp"
#include "node/backends/cgroup_memory/CgroupMemoryBackend.hpp"
#include "node/backends/processes/ProcessesBackend.hpp"

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

} // namespace colmet::node
