// Every backend colmet-node can run, one row each: its name (as on the
// wire), what kind it is, the colmet-node flag that turns it on (node-level
// ones and perfhw; the job backends run unless --disable-backend), the word
// that asks for it in a job spec (oarsub -t colmet=..., srun --colmet=...),
// and one line saying what it measures. Header-only and dependency-free, so
// that every component that names backends (colmet-node's options and
// --list-backends, colmet-job's spec and flags, the SPANK plugin's spec
// check) reads this one table; the factories that build them live in each
// backend's folder (node/backends/<name>/), keyed by the same names.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::spec {

enum class BackendKind {
    job,      // reads the job's cgroups; runs unless disabled
    node,     // measures the whole node; runs only when enabled
    perfhw,   // perf counters of the job's cgroup; enabled, with its events
    derived,  // computed from the other backends' values; runs with them unless disabled
    device,   // the job's devices (GPUs); runs only when enabled, like a node-level backend
};

// Kinds that run only when their flag (or spec word) asks for them.
constexpr bool enabled_by_flag(BackendKind kind) { return kind == BackendKind::node || kind == BackendKind::device; }

// What a backend needs of root once colmet-node has started (it drops the
// rest: node/Privileges.hpp).
enum class Privilege {
    none,        // files any user, or root as their owner, reads
    perf_open,   // perf_event_open in cgroup mode or on a PMU, also after the start
    other_proc,  // /proc/<pid>/io of processes of other users
};

struct BackendInfo {
    std::string_view name;
    BackendKind kind;
    std::string_view flag;          // colmet-node's flag that enables it ("" for job backends)
    std::string_view spec_keyword;  // the job spec's word for it ("" for job backends)
    std::string_view description;   // one line, for --list-backends, --help and docs
    Privilege privilege = Privilege::none;
};

// One row per backend; the count follows the rows.
inline constexpr auto k_backend_catalog = std::to_array<BackendInfo>({
    {"cgroup_cpu", BackendKind::job, "", "", "CPU time of the job's cgroup (usage, user, system) and CFS throttling"},
    {"cgroup_memory", BackendKind::job, "", "",
     "Memory of the job's cgroup: current, peak, anonymous, page cache, major faults"},
    {"cgroup_io", BackendKind::job, "", "", "Block I/O of the job's cgroup summed over devices: bytes and operations"},
    {"processes", BackendKind::job, "", "",
     "Processes and threads of the job, and their cumulative I/O from /proc/<pid>/io", Privilege::other_proc},
    {"perfhw", BackendKind::perfhw, "--enable-perfhw", "perfhw",
     "Perf events of the job's cgroup (perf_event in cgroup mode): hardware and software counters",
     Privilege::perf_open},
    {"rapl", BackendKind::node, "--enable-RAPL", "rapl",
     "Energy of each CPU package and RAPL domain (powercap, else the perf power PMU), cumulative J",
     Privilege::perf_open},
    {"temperature", BackendKind::node, "--enable-temperature", "temperature",
     "Temperatures of the thermal zones and hwmon sensors, degC"},
    {"infiniband", BackendKind::node, "--enable-infiniband", "infiniband",
     "InfiniBand/Omni-Path port counters: bytes and packets sent and received"},
    {"lustre", BackendKind::node, "--enable-lustre", "lustre",
     "Lustre client statistics of each mount (llite stats): bytes and operations"},
    {"gpu", BackendKind::device, "--enable-gpu", "gpu",
     "NVIDIA GPUs the job may use, through NVML (loaded at run time): utilisation, memory, power, energy, "
     "temperature, clocks"},
    {"energy", BackendKind::derived, "", "",
     "The job's share of each RAPL domain's energy (with rapl): idle baseline by allocated CPUs, the rest by CPU "
     "time, cumulative J"},
});

// The row of that name, or nullptr.
constexpr const BackendInfo *backend_info(std::string_view name)
{
    for (const auto &b : k_backend_catalog)
        if (b.name == name)
            return &b;
    return nullptr;
}

// The row whose spec keyword this is, or nullptr.
constexpr const BackendInfo *backend_for_spec_keyword(std::string_view keyword)
{
    for (const auto &b : k_backend_catalog)
        if (!b.spec_keyword.empty() && b.spec_keyword == keyword)
            return &b;
    return nullptr;
}

// The spec words of the backends enabled by a flag (node-level ones, gpu),
// in table order, joined by `sep`, the last two by `last_sep` ("rapl,
// temperature, infiniband, lustre, gpu").
inline std::string node_spec_keywords(std::string_view sep = ", ", std::string_view last_sep = ", ")
{
    std::vector<std::string_view> words;
    for (const auto &b : k_backend_catalog)
        if (enabled_by_flag(b.kind))
            words.push_back(b.spec_keyword);
    std::string out;
    for (size_t i = 0; i < words.size(); ++i)
        out.append(i == 0 ? "" : i + 1 == words.size() ? last_sep : sep).append(words[i]);
    return out;
}

// perfhw's flag, for the programs that take or pass it.
inline constexpr std::string_view k_perfhw_flag = backend_info("perfhw")->flag;

}  // namespace colmet::spec
