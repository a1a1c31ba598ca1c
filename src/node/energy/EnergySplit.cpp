#include "node/energy/EnergySplit.hpp"

#include <algorithm>

namespace colmet::node::energy {

EnergySplit split_energy(const NodeInterval &node, std::span<const JobInterval> jobs)
{
    double allocated = 0, used = 0;
    for (const auto &j : jobs) {
        allocated += std::max(j.allocated_cpus, 0.0);
        used += std::max(j.cpu_s, 0.0);
    }
    const double cpus = std::max(node.cpus, allocated);
    const double busy = std::max(node.busy_cpu_s, used);
    EnergySplit out;
    out.utilisation =
        node.seconds > 0 && node.cpus > 0 ? std::clamp(node.busy_cpu_s / (node.cpus * node.seconds), 0.0, 1.0) : 0.0;
    const double u = out.utilisation;
    auto share = [&](double a, double c) {
        const double idle_part = cpus > 0 ? (1 - u) * a / cpus : 0.0;
        const double busy_part = busy > 0 ? u * c / busy : 0.0;
        return node.energy_j * (idle_part + busy_part);
    };
    out.jobs.reserve(jobs.size());
    for (const auto &j : jobs)
        out.jobs.push_back(share(std::max(j.allocated_cpus, 0.0), std::max(j.cpu_s, 0.0)));
    // What no job holds: unallocated CPUs, and the busy time outside jobs
    // (all of the busy part when there is none).
    const double idle_part = cpus > 0 ? (1 - u) * (cpus - allocated) / cpus : (1 - u);
    const double busy_part = busy > 0 ? u * (busy - used) / busy : u;
    out.idle_j = node.energy_j * (idle_part + busy_part);
    return out;
}

}  // namespace colmet::node::energy
