#include "node/backends/gpu/GpuBackend.hpp"

#include "common/file_io.hpp"
#include "node/backends/support/next_token.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace colmet::node::backends::gpu {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr unsigned k_max_processes = 256;

enum Column : size_t {
    utilisation,
    memory_utilisation,
    memory_used,
    memory_total,
    job_memory,
    power,
    energy,
    job_energy,
    temperature,
    sm_clock,
    memory_clock,
};

}  // namespace

Result<std::unique_ptr<GpuBackend>> GpuBackend::make(const GpuOptions &options)
{
    auto nvml = Nvml::load(options.library);
    if (!nvml)
        return nvml.error();
    const NvmlApi &api = (*nvml)->api();
    unsigned count = 0;
    if (nvmlReturn_t rc = api.device_count(&count); rc != k_nvml_success)
        return Error(Errc::unsupported, "NVML: nvmlDeviceGetCount: " + api.error(rc));
    std::vector<DeviceId> ids;
    std::vector<Gpu> all;
    for (unsigned i = 0; i < count; ++i) {
        Gpu g;
        g.index = i;
        if (nvmlReturn_t rc = api.handle_by_index(i, &g.handle); rc != k_nvml_success)
            return Error(Errc::unsupported, "NVML: GPU " + std::to_string(i) + ": " + api.error(rc));
        char uuid[96] = {};
        if (api.uuid(g.handle, uuid, sizeof uuid) == k_nvml_success)
            g.uuid = uuid;
        unsigned minor = 0;
        DeviceId id{i, g.uuid, -1};
        if (api.minor_number && api.minor_number(g.handle, &minor) == k_nvml_success)
            id.minor = static_cast<int>(minor);
        ids.push_back(id);
        all.push_back(std::move(g));
    }
    std::string devices_list;
    if (!options.devices_list.empty())
        if (auto text = read_file(options.devices_list))
            devices_list = std::move(*text);
    auto selection = select_gpus(ids, devices_list, options.list, options.list_source);
    if (!selection)
        return selection.error();
    if (count == 0)
        return Error(Errc::not_found, "NVML sees no GPU on this node");
    std::vector<Gpu> chosen;
    for (unsigned i : selection->indices)
        chosen.push_back(all[i]);
    return std::unique_ptr<GpuBackend>(
        new GpuBackend(std::move(*nvml), std::move(*selection), std::move(chosen), options));
}

GpuBackend::GpuBackend(std::unique_ptr<Nvml> nvml, Selection selection, std::vector<Gpu> gpus,
                       const GpuOptions &options)
    : m_nvml(std::move(nvml)), m_selection(std::move(selection)), m_gpus(std::move(gpus))
{
    using wire::MetricKind;
    for (const Gpu &g : m_gpus) {
        const std::string p = "gpu" + std::to_string(g.index) + "_";
        for (const wire::MetricDescriptor &d : {wire::MetricDescriptor{p + "utilisation", "1", MetricKind::gauge},
                                                {p + "memory_utilisation", "1", MetricKind::gauge},
                                                {p + "memory_used", "B", MetricKind::gauge},
                                                {p + "memory_total", "B", MetricKind::gauge},
                                                {p + "job_memory", "B", MetricKind::gauge},
                                                {p + "power", "W", MetricKind::gauge},
                                                {p + "energy", "J", MetricKind::counter},
                                                {p + "job_energy", "J", MetricKind::counter},
                                                {p + "temperature", "degC", MetricKind::gauge},
                                                {p + "sm_clock", "Hz", MetricKind::gauge},
                                                {p + "memory_clock", "Hz", MetricKind::gauge}})
            m_metrics.push_back(d);
    }
    if (!options.procs_dir.empty())
        m_procs = KeptFile(options.procs_dir, "cgroup.procs");
    m_pids.reserve(4096);
    m_processes.resize(k_max_processes);
}

std::string GpuBackend::gpus_meta() const
{
    std::string out;
    for (const Gpu &g : m_gpus)
        out.append(out.empty() ? "" : ",").append(std::to_string(g.index)).append(":").append(g.uuid);
    return out;
}

void GpuBackend::problem(const Gpu &gpu, const char *what, nvmlReturn_t rc) noexcept
{
    const char *text = m_nvml->api().error_string ? m_nvml->api().error_string(rc) : nullptr;
    m_problems.item("gpu").add(static_cast<uint64_t>(gpu.index)).add(" ").add(what).add(": ").add(text ? text : "?");
}

// The job's processes, from its cgroup.procs (none without a cgroup).
void GpuBackend::read_job_pids() noexcept
{
    m_pids.clear();
    if (!m_procs.is_open())
        return;
    std::string_view text;
    if (!m_procs.read(text, m_problems))
        return;
    for (std::string_view token = next_token(text); !token.empty(); token = next_token(text)) {
        int pid = 0;
        if (std::from_chars(token.data(), token.data() + token.size(), pid).ec == std::errc() &&
            m_pids.size() < m_pids.capacity())
            m_pids.push_back(pid);
    }
    std::sort(m_pids.begin(), m_pids.end());
}

void GpuBackend::sample_gpu(Gpu &gpu, double *v) noexcept
{
    const NvmlApi &api = m_nvml->api();
    nvmlReturn_t rc;
    NvmlUtilization util{};
    if ((rc = api.utilization(gpu.handle, &util)) == k_nvml_success) {
        v[utilisation] = util.gpu / 100.0;
        v[memory_utilisation] = util.memory / 100.0;
    } else {
        problem(gpu, "utilisation", rc);
    }
    NvmlMemory mem{};
    if ((rc = api.memory(gpu.handle, &mem)) == k_nvml_success) {
        v[memory_used] = static_cast<double>(mem.used);
        v[memory_total] = static_cast<double>(mem.total);
    } else {
        problem(gpu, "memory", rc);
    }
    // The job's processes' memory, and everyone's (for the energy share).
    double mine = k_nan, everyone = k_nan;
    if (api.processes) {
        unsigned n = static_cast<unsigned>(m_processes.size());
        if ((rc = api.processes(gpu.handle, &n, m_processes.data())) == k_nvml_success) {
            mine = everyone = 0;
            bool known = true;
            for (unsigned i = 0; i < n; ++i) {
                const NvmlProcessInfo &p = m_processes[i];
                if (p.usedGpuMemory == k_nvml_value_not_available) {
                    known = false;
                    continue;
                }
                everyone += static_cast<double>(p.usedGpuMemory);
                if (std::binary_search(m_pids.begin(), m_pids.end(), static_cast<int>(p.pid)))
                    mine += static_cast<double>(p.usedGpuMemory);
            }
            if (!known) {
                mine = everyone = k_nan;
                m_problems.item("gpu").add(static_cast<uint64_t>(gpu.index)).add(" per-process memory not available");
            }
        } else {
            problem(gpu, "processes", rc);
        }
    } else {
        m_problems.item("gpu per-process memory not in this NVML");
    }
    if (!m_procs.is_open())
        mine = k_nan;  // the job's processes are not known
    v[job_memory] = mine;
    unsigned value = 0;
    if (!api.power)
        m_problems.item("gpu power not in this NVML");
    else if ((rc = api.power(gpu.handle, &value)) == k_nvml_success)
        v[power] = value / 1000.0;
    else
        problem(gpu, "power", rc);
    unsigned long long mj = 0;
    if (!api.energy) {
        m_problems.item("gpu energy not in this NVML");
    } else if ((rc = api.energy(gpu.handle, &mj)) == k_nvml_success) {
        if (!gpu.have_energy) {
            gpu.have_energy = true;
            gpu.first_mj = gpu.last_mj = mj;
        }
        if (mj >= gpu.last_mj) {
            double share = 1;
            if (!m_selection.exclusive)
                share = std::isnan(everyone) ? k_nan : everyone > 0 ? mine / everyone : 1;
            if (!std::isnan(share))
                gpu.job_energy_j += static_cast<double>(mj - gpu.last_mj) / 1000.0 * share;
            gpu.last_mj = mj;
        }
        v[energy] = static_cast<double>(gpu.last_mj - gpu.first_mj) / 1000.0;
        v[job_energy] = gpu.job_energy_j;
    } else {
        problem(gpu, "energy", rc);
    }
    if (!api.temperature)
        m_problems.item("gpu temperature not in this NVML");
    else if ((rc = api.temperature(gpu.handle, k_nvml_temperature_gpu, &value)) == k_nvml_success)
        v[temperature] = value;
    else
        problem(gpu, "temperature", rc);
    if (api.clock) {
        if ((rc = api.clock(gpu.handle, k_nvml_clock_sm, &value)) == k_nvml_success)
            v[sm_clock] = value * 1e6;
        else
            problem(gpu, "SM clock", rc);
        if ((rc = api.clock(gpu.handle, k_nvml_clock_mem, &value)) == k_nvml_success)
            v[memory_clock] = value * 1e6;
        else
            problem(gpu, "memory clock", rc);
    } else {
        m_problems.item("gpu clocks not in this NVML");
    }
}

void GpuBackend::sample(std::span<double> values) noexcept
{
    std::fill(values.begin(), values.end(), k_nan);
    m_problems.clear();
    read_job_pids();
    for (size_t i = 0; i < m_gpus.size() && (i + 1) * k_metrics_per_gpu <= values.size(); ++i)
        sample_gpu(m_gpus[i], values.data() + i * k_metrics_per_gpu);
    set_status(m_problems.view());
}

}  // namespace colmet::node::backends::gpu
