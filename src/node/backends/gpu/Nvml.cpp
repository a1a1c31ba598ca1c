#include "node/backends/gpu/Nvml.hpp"

#include <dlfcn.h>

#include <string_view>

namespace colmet::node::backends::gpu {

namespace {

template <typename F>
bool resolve(void *handle, const char *name, F &fn)
{
    fn = reinterpret_cast<F>(dlsym(handle, name));
    return fn != nullptr;
}

}  // namespace

std::string NvmlApi::error(nvmlReturn_t rc) const
{
    const char *text = error_string ? error_string(rc) : nullptr;
    return text ? std::string(text) : "NVML error " + std::to_string(rc);
}

Result<std::unique_ptr<Nvml>> Nvml::load(const std::string &library)
{
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        return Error(Errc::not_found, "NVML (" + library + ") cannot be loaded: " + (why ? why : "dlopen failed"));
    }
    NvmlApi api;
    const char *missing = nullptr;
    auto need = [&](const char *name, auto &fn) {
        if (!resolve(handle, name, fn) && !missing)
            missing = name;
    };
    need("nvmlInit_v2", api.init);
    need("nvmlShutdown", api.shutdown);
    need("nvmlErrorString", api.error_string);
    need("nvmlDeviceGetCount_v2", api.device_count);
    need("nvmlDeviceGetHandleByIndex_v2", api.handle_by_index);
    need("nvmlDeviceGetUUID", api.uuid);
    need("nvmlDeviceGetUtilizationRates", api.utilization);
    need("nvmlDeviceGetMemoryInfo", api.memory);
    if (missing) {
        dlclose(handle);
        return Error(Errc::unsupported, "NVML (" + library + ") lacks " + missing);
    }
    resolve(handle, "nvmlDeviceGetMinorNumber", api.minor_number);
    resolve(handle, "nvmlDeviceGetPowerUsage", api.power);
    resolve(handle, "nvmlDeviceGetTotalEnergyConsumption", api.energy);
    resolve(handle, "nvmlDeviceGetTemperature", api.temperature);
    resolve(handle, "nvmlDeviceGetClockInfo", api.clock);
    resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", api.processes);
    if (const nvmlReturn_t rc = api.init(); rc != k_nvml_success) {
        std::string why = api.error(rc);
        dlclose(handle);
        return Error(Errc::unsupported, "NVML (" + library + "): nvmlInit: " + why);
    }
    return std::unique_ptr<Nvml>(new Nvml(handle, api));
}

Nvml::~Nvml()
{
    m_api.shutdown();
    dlclose(m_handle);
}

}  // namespace colmet::node::backends::gpu
