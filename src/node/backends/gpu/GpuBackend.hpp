// Backend "gpu" (scope job; colmet-node --enable-gpu): the NVIDIA GPUs the
// job may use (GpuSelection.hpp), read through NVML (Nvml.hpp) at every
// sample. Metrics, for each selected GPU <i> (NVML's index; the job_start
// metadata "gpus" maps each to its UUID):
//   gpu<i>_utilisation, gpu<i>_memory_utilisation  [1, gauge 0..1: NVML's percent / 100]
//   gpu<i>_memory_used, gpu<i>_memory_total         [B, gauge]
//   gpu<i>_job_memory  [B, gauge: GPU memory of the job's own processes (NVML's per-process list)]
//   gpu<i>_power       [W, gauge]
//   gpu<i>_energy      [J, counter: since the sampler started]
//   gpu<i>_job_energy  [J, counter: the job's share of it, below]
//   gpu<i>_temperature [degC, gauge]
//   gpu<i>_sm_clock, gpu<i>_memory_clock [Hz, gauge]
// A value NVML does not support on a GPU, or cannot give now, is NaN with
// the reason in the status; never 0.
//
// The job's share of a GPU's energy: all of it when the devices cgroup
// gives the GPU to the job alone; otherwise, over each interval, the
// share of the GPU memory its processes hold among all processes on that
// GPU (all of it when no process is on it: the job holds it idle).
#pragma once

#include "common/result.hpp"
#include "node/MetricBackend.hpp"
#include "node/backends/gpu/GpuSelection.hpp"
#include "node/backends/gpu/Nvml.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/StatusText.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::backends::gpu {

// The backend's name (on the wire, and as --enable-gpu's backend).
inline constexpr std::string_view k_name = "gpu";

struct GpuOptions {
    std::string library = "libnvidia-ml.so.1";
    std::string list;                    // --gpus, or the environment's list
    std::string list_source;             // where `list` came from ("--gpus", "CUDA_VISIBLE_DEVICES", ...)
    std::filesystem::path devices_list;  // the job's devices.list (v1), empty when none
    std::filesystem::path procs_dir;     // the job's cgroup directory (its cgroup.procs)
};

class GpuBackend final : public MetricBackend {
public:
    // Load NVML, list the node's GPUs, choose the job's. Fails (one line
    // for the log) without NVML or with a list that names no GPU here.
    static Result<std::unique_ptr<GpuBackend>> make(const GpuOptions &options);

    std::string_view name() const override { return k_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return m_metrics; }
    void sample(std::span<double> values) noexcept override;

    const Selection &selection() const { return m_selection; }
    // "<index>:<uuid>,..." of the selected GPUs (metadata "gpus").
    std::string gpus_meta() const;

    static constexpr size_t k_metrics_per_gpu = 11;

private:
    struct Gpu {
        unsigned index = 0;
        std::string uuid;
        nvmlDevice_t handle = nullptr;
        bool have_energy = false;
        unsigned long long first_mj = 0;
        unsigned long long last_mj = 0;
        double job_energy_j = 0;
    };
    GpuBackend(std::unique_ptr<Nvml> nvml, Selection selection, std::vector<Gpu> gpus, const GpuOptions &options);
    void read_job_pids() noexcept;
    void sample_gpu(Gpu &gpu, double *v) noexcept;
    void problem(const Gpu &gpu, const char *what, nvmlReturn_t rc) noexcept;

    std::unique_ptr<Nvml> m_nvml;
    Selection m_selection;
    std::vector<Gpu> m_gpus;
    std::vector<wire::MetricDescriptor> m_metrics;
    KeptFile m_procs;
    std::vector<int> m_pids;                   // the job's, sorted (reserved)
    std::vector<NvmlProcessInfo> m_processes;  // NVML's list (reserved)
    StatusText m_problems;
};

}  // namespace colmet::node::backends::gpu
