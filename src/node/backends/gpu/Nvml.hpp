// NVIDIA's management library (NVML), loaded at run time with dlopen, so
// that colmet builds and runs on machines without it: only the few
// functions the gpu backend calls, with NVML's own C types and values (from
// nvml.h; NVML keeps them stable across versions). Required functions
// missing make the load fail; optional ones (energy, per-process memory)
// are null and their values NaN.
#pragma once

#include "common/result.hpp"

#include <memory>
#include <string>

namespace colmet::node::backends::gpu {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st *;

inline constexpr nvmlReturn_t k_nvml_success = 0;
inline constexpr nvmlReturn_t k_nvml_not_supported = 3;
inline constexpr nvmlReturn_t k_nvml_no_permission = 4;
inline constexpr nvmlReturn_t k_nvml_insufficient_size = 7;
inline constexpr unsigned long long k_nvml_value_not_available = ~0ULL;
inline constexpr int k_nvml_temperature_gpu = 0;  // nvmlTemperatureSensors_t
inline constexpr int k_nvml_clock_sm = 1;         // nvmlClockType_t
inline constexpr int k_nvml_clock_mem = 2;

struct NvmlUtilization {  // nvmlUtilization_t, percent
    unsigned int gpu;
    unsigned int memory;
};
struct NvmlMemory {  // nvmlMemory_t, bytes
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2 layout, used by the _v3 call)
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

struct NvmlApi {
    // Required.
    nvmlReturn_t (*init)() = nullptr;  // nvmlInit_v2
    nvmlReturn_t (*shutdown)() = nullptr;
    const char *(*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*device_count)(unsigned int *) = nullptr;                   // nvmlDeviceGetCount_v2
    nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t *) = nullptr;  // nvmlDeviceGetHandleByIndex_v2
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int) = nullptr;
    nvmlReturn_t (*utilization)(nvmlDevice_t, NvmlUtilization *) = nullptr;
    nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory *) = nullptr;
    // Optional.
    nvmlReturn_t (*minor_number)(nvmlDevice_t, unsigned int *) = nullptr;
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *) = nullptr;                         // mW
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *) = nullptr;                  // mJ since the driver loaded
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *) = nullptr;              // degC
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *) = nullptr;                    // MHz
    nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int *, NvmlProcessInfo *) = nullptr;  // _v3

    std::string error(nvmlReturn_t rc) const;
};

// The loaded and initialised library; shut down and closed when destroyed.
class Nvml {
public:
    // dlopen(library) ("libnvidia-ml.so.1": the driver's), resolve, nvmlInit.
    static Result<std::unique_ptr<Nvml>> load(const std::string &library);
    ~Nvml();
    Nvml(const Nvml &) = delete;
    Nvml &operator=(const Nvml &) = delete;

    const NvmlApi &api() const { return m_api; }

private:
    Nvml(void *handle, NvmlApi api) : m_handle(handle), m_api(api) {}
    void *m_handle;
    NvmlApi m_api;
};

}  // namespace colmet::node::backends::gpu
