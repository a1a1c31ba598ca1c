// libFuzzer target for the texts colmet-node parses for the energy and gpu
// backends: /proc/stat (EnergySplit's node CPU time), the node's energy
// ledger, a devices cgroup's devices.list and a GPU list (--gpus,
// CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS: the job's environment). The first
// byte chooses (even: /proc/stat; 3 mod 4: the ledger; else the GPUs, the
// rest "<devices.list>\0<list>"). Any text must be parsed or refused, and
// what comes out must hold: busy time and CPUs finite and not negative; a
// ledger written again reads back the same, and advancing it keeps every
// share finite and not negative; chosen GPUs among the node's, ascending,
// each once.
#include "node/backends/gpu/GpuSelection.hpp"
#include "node/energy/EnergyLedger.hpp"
#include "node/energy/ProcStat.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using namespace colmet::node;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        energy::CpuTimes t;
        if (energy::parse_proc_stat(text, 100, t) && (!std::isfinite(t.busy_s) || t.busy_s < 0 || !(t.cpus >= 1)))
            std::abort();
        return 0;
    }
    if (data[0] % 4 == 3) {
        auto ledger = energy::parse_ledger(text);
        if (!ledger)
            return 0;
        const std::string again = energy::format_ledger(*ledger);
        auto back = energy::parse_ledger(again);
        if (!back || energy::format_ledger(*back) != again)
            std::abort();
        // One update: every job gone but the first, the counters moved on.
        energy::NodeReading now;
        now.time_ns = ledger->time_ns + 1'000'000'000;
        for (const auto &d : ledger->domains) {
            now.raw_uj.push_back(d.raw_uj + 1'000'000);
            now.have_raw.push_back(true);
        }
        now.busy_s = ledger->busy_s + 1;
        now.cpus = ledger->cpus;
        for (size_t k = 0; k < ledger->jobs.size(); ++k)
            now.job_cpu_s.push_back(k == 0 ? ledger->jobs[k].cpu_s + 0.5 : std::nan(""));
        energy::advance_ledger(*ledger, now);
        for (const auto &d : ledger->domains)
            if (!std::isfinite(d.energy_j) || !(d.idle_j >= -1e-6 * (1 + d.energy_j)) || !(d.retired_j >= 0))
                std::abort();
        for (const auto &j : ledger->jobs)
            for (double share : j.shares_j)
                if (!std::isfinite(share) || share < 0)
                    std::abort();
        return 0;
    }
    static const std::vector<backends::gpu::DeviceId> devices{
        {0, "GPU-aaaa", 0}, {1, "GPU-bbbb", 1}, {2, "GPU-cccc", 7}, {3, "GPU-dddd", -1}};
    const size_t nul = text.find('\0');
    const std::string_view devices_list = text.substr(0, nul);
    const std::string_view list = nul == std::string_view::npos ? std::string_view{} : text.substr(nul + 1);
    auto chosen = backends::gpu::select_gpus(devices, devices_list, list, "fuzz");
    if (!chosen)
        return 0;
    for (size_t i = 0; i < chosen->indices.size(); ++i)
        if (chosen->indices[i] >= devices.size() || (i > 0 && chosen->indices[i] <= chosen->indices[i - 1]))
            std::abort();
    return 0;
}
