// The 28 event names of the original colmet and resolve_event(). The PMU
// syntax lives in SysfsPmu.cpp, libpfm4 names in LibpfmEvents.cpp.
#include "perf/PerfEventSpec.hpp"
#include "common/text.hpp"
#include "perf/SysfsPmu.hpp"
#if COLMET_HAVE_LIBPFM
#include "perf/LibpfmEvents.hpp"
#endif

#include <linux/perf_event.h>

#include <algorithm>
#include <array>

namespace colmet::perf {

namespace {

// Longest event name accepted anywhere (a PMU event with many terms fits).
constexpr size_t k_max_name_length = 256;

struct LegacyEvent {
    const char *name;
    uint32_t type;
    uint64_t config;
    bool nanoseconds;  // cpu_clock and task_clock count ns; reported in seconds
    const char *meaning;
};

// PERF_TYPE_HW_CACHE config, as perf_event_open(2) documents it.
constexpr uint64_t hw_cache(perf_hw_cache_id cache, perf_hw_cache_op_id op, perf_hw_cache_op_result_id result)
{
    return static_cast<uint64_t>(cache) | (static_cast<uint64_t>(op) << 8) | (static_cast<uint64_t>(result) << 16);
}

// The read accesses of one cache: what the original's raw cache ids meant.
constexpr uint64_t read_access(perf_hw_cache_id cache)
{
    return hw_cache(cache, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS);
}

constexpr uint32_t k_hw = PERF_TYPE_HARDWARE;
constexpr uint32_t k_cache = PERF_TYPE_HW_CACHE;
constexpr uint32_t k_sw = PERF_TYPE_SOFTWARE;

// The original (lib_perf_hw.c, from MojitO/S) put a single enum value into the
// HW_CACHE config, so op and result were always 0 (READ, ACCESS). That is right
// for cache_l1d ... cache_node (read accesses of that cache) and kept here.
// It was wrong for the three names that are an op or a result rather than a
// cache: cache_op_read and cache_result_access were config 0 (L1D read
// accesses, a copy of cache_l1d) and cache_op_prefetch was config 2 (LL read
// accesses, a copy of cache_ll). colmet fixes them by one rule:
//  - the cache stays L1D, the cache id 0 the original always produced for them;
//  - the part the name states is set (op READ, op PREFETCH, result ACCESS);
//  - the part it leaves open takes the first value that does not repeat
//    another name: READ+ACCESS is cache_l1d, so cache_op_read counts the other
//    result of reads (MISS), and cache_result_access counts the accesses of the
//    next op (WRITE; PREFETCH+ACCESS is already cache_op_prefetch).
// With cache_l1d the three give the four L1D figures of perf(1):
// L1-dcache-loads, -load-misses, -stores and -prefetches.
constexpr std::array<LegacyEvent, 28> k_legacy = {{
    {"cpu_cycles", k_hw, PERF_COUNT_HW_CPU_CYCLES, false, "CPU cycles (PERF_TYPE_HARDWARE CPU_CYCLES)"},
    {"instructions", k_hw, PERF_COUNT_HW_INSTRUCTIONS, false, "instructions retired (PERF_TYPE_HARDWARE INSTRUCTIONS)"},
    {"cache_references", k_hw, PERF_COUNT_HW_CACHE_REFERENCES, false,
     "cache accesses, usually last-level (PERF_TYPE_HARDWARE CACHE_REFERENCES)"},
    {"cache_misses", k_hw, PERF_COUNT_HW_CACHE_MISSES, false,
     "cache misses, usually last-level (PERF_TYPE_HARDWARE CACHE_MISSES)"},
    {"branch_instructions", k_hw, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, false,
     "branch instructions retired (PERF_TYPE_HARDWARE BRANCH_INSTRUCTIONS)"},
    {"branch_misses", k_hw, PERF_COUNT_HW_BRANCH_MISSES, false,
     "mispredicted branches (PERF_TYPE_HARDWARE BRANCH_MISSES)"},
    {"bus_cycles", k_hw, PERF_COUNT_HW_BUS_CYCLES, false, "bus cycles (PERF_TYPE_HARDWARE BUS_CYCLES)"},
    {"ref_cpu_cycles", k_hw, PERF_COUNT_HW_REF_CPU_CYCLES, false,
     "CPU cycles at the reference frequency, not scaled by frequency changes (PERF_TYPE_HARDWARE REF_CPU_CYCLES)"},
    {"cache_l1d", k_cache, read_access(PERF_COUNT_HW_CACHE_L1D), false,
     "L1 data cache read accesses (PERF_TYPE_HW_CACHE L1D/READ/ACCESS)"},
    {"cache_ll", k_cache, read_access(PERF_COUNT_HW_CACHE_LL), false,
     "last-level cache read accesses (PERF_TYPE_HW_CACHE LL/READ/ACCESS)"},
    {"cache_dtlb", k_cache, read_access(PERF_COUNT_HW_CACHE_DTLB), false,
     "data TLB read accesses (PERF_TYPE_HW_CACHE DTLB/READ/ACCESS)"},
    {"cache_itlb", k_cache, read_access(PERF_COUNT_HW_CACHE_ITLB), false,
     "instruction TLB read accesses (PERF_TYPE_HW_CACHE ITLB/READ/ACCESS)"},
    {"cache_bpu", k_cache, read_access(PERF_COUNT_HW_CACHE_BPU), false,
     "branch prediction unit read accesses (PERF_TYPE_HW_CACHE BPU/READ/ACCESS)"},
    {"cache_node", k_cache, read_access(PERF_COUNT_HW_CACHE_NODE), false,
     "NUMA node memory read accesses (PERF_TYPE_HW_CACHE NODE/READ/ACCESS)"},
    {"cache_op_read", k_cache,
     hw_cache(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS), false,
     "L1 data cache read misses (PERF_TYPE_HW_CACHE L1D/READ/MISS; the original counted L1D read accesses)"},
    {"cache_op_prefetch", k_cache,
     hw_cache(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_ACCESS), false,
     "L1 data cache prefetch accesses (PERF_TYPE_HW_CACHE L1D/PREFETCH/ACCESS; the original counted LL read accesses)"},
    {"cache_result_access", k_cache,
     hw_cache(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_WRITE, PERF_COUNT_HW_CACHE_RESULT_ACCESS), false,
     "L1 data cache write accesses (PERF_TYPE_HW_CACHE L1D/WRITE/ACCESS; the original counted L1D read accesses)"},
    {"cpu_clock", k_sw, PERF_COUNT_SW_CPU_CLOCK, true, "CPU clock time in seconds (PERF_TYPE_SOFTWARE CPU_CLOCK, ns)"},
    {"task_clock", k_sw, PERF_COUNT_SW_TASK_CLOCK, true,
     "time the job's tasks ran, in seconds (PERF_TYPE_SOFTWARE TASK_CLOCK, ns)"},
    {"page_faults", k_sw, PERF_COUNT_SW_PAGE_FAULTS, false, "page faults (PERF_TYPE_SOFTWARE PAGE_FAULTS)"},
    {"context_switches", k_sw, PERF_COUNT_SW_CONTEXT_SWITCHES, false,
     "context switches (PERF_TYPE_SOFTWARE CONTEXT_SWITCHES)"},
    {"cpu_migrations", k_sw, PERF_COUNT_SW_CPU_MIGRATIONS, false,
     "migrations of a task to another CPU (PERF_TYPE_SOFTWARE CPU_MIGRATIONS)"},
    {"page_faults_min", k_sw, PERF_COUNT_SW_PAGE_FAULTS_MIN, false,
     "minor page faults, no disk I/O (PERF_TYPE_SOFTWARE PAGE_FAULTS_MIN)"},
    {"page_faults_maj", k_sw, PERF_COUNT_SW_PAGE_FAULTS_MAJ, false,
     "major page faults, with disk I/O (PERF_TYPE_SOFTWARE PAGE_FAULTS_MAJ)"},
    {"alignment_faults", k_sw, PERF_COUNT_SW_ALIGNMENT_FAULTS, false,
     "alignment faults (PERF_TYPE_SOFTWARE ALIGNMENT_FAULTS)"},
    {"emulation_faults", k_sw, PERF_COUNT_SW_EMULATION_FAULTS, false,
     "emulation faults (PERF_TYPE_SOFTWARE EMULATION_FAULTS)"},
    {"dummy", k_sw, PERF_COUNT_SW_DUMMY, false, "placeholder that counts nothing (PERF_TYPE_SOFTWARE DUMMY)"},
    {"bpf_output", k_sw, PERF_COUNT_SW_BPF_OUTPUT, false,
     "BPF output events, counts nothing without a BPF program (PERF_TYPE_SOFTWARE BPF_OUTPUT)"},
}};

const LegacyEvent *find_legacy(std::string_view name)
{
    for (const auto &e : k_legacy)
        if (name == e.name)
            return &e;
    return nullptr;
}

PerfEventSpec legacy_spec(const LegacyEvent &e)
{
    PerfEventSpec spec;
    spec.name = e.name;
    spec.type = e.type;
    spec.config = e.config;
    if (e.nanoseconds) {
        spec.unit = "s";
        spec.scale = 1e-9;
    }
    return spec;
}

Error unknown_event(std::string_view name, const std::filesystem::path &sysfs_root)
{
    std::string message = "unknown perf event '" + text::printable(name) + "': use one of the 28 colmet names (";
    for (size_t i = 0; i < k_legacy.size(); ++i) {
        if (i > 0)
            message += ", ";
        message += k_legacy[i].name;
    }
    message += "), a PMU event written pmu/event/ (see " + pmu_devices_dir(sysfs_root).string() + ")";
    message += have_libpfm() ? ", or a libpfm4 name" : "";
    return Error::invalid(std::move(message));
}

// cpu_clock and task_clock count nanoseconds whichever name selected them
// ("perf::TASK-CLOCK" through libpfm4, "software/config=1/"): report seconds.
void clocks_in_seconds(PerfEventSpec &spec)
{
    bool clock = spec.type == PERF_TYPE_SOFTWARE &&
                 (spec.config == PERF_COUNT_SW_CPU_CLOCK || spec.config == PERF_COUNT_SW_TASK_CLOCK);
    if (clock && spec.unit == "1" && spec.scale == 1.0) {
        spec.unit = "s";
        spec.scale = 1e-9;
    }
}

// Names without blanks or control bytes; sysfs and libpfm4 names are ASCII.
bool printable_name(std::string_view name)
{
    return std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

}  // namespace

bool have_libpfm()
{
#if COLMET_HAVE_LIBPFM
    return true;
#else
    return false;
#endif
}

const std::vector<NamedEvent> &legacy_event_names()
{
    static const std::vector<NamedEvent> s_names = [] {
        std::vector<NamedEvent> v;
        v.reserve(std::size(k_legacy));
        for (const auto &e : k_legacy)
            v.push_back({e.name, e.meaning});
        return v;
    }();
    return s_names;
}

Result<PerfEventSpec> resolve_event(std::string_view name, const std::filesystem::path &sysfs_root)
{
    if (name.empty())
        return Error::invalid("empty perf event name");
    if (name.size() > k_max_name_length)
        return Error::invalid("perf event name '" + text::printable(name.substr(0, 40)) + "...' is longer than " +
                              std::to_string(k_max_name_length) + " bytes");
    if (!printable_name(name))
        return Error::invalid("perf event name '" + text::printable(name) + "' holds blanks or control characters");
    if (const LegacyEvent *e = find_legacy(name))
        return legacy_spec(*e);
    if (name.find('/') != std::string_view::npos) {
        auto pmu = resolve_pmu_event(name, sysfs_root);
        if (pmu)
            clocks_in_seconds(*pmu);
        return pmu;
    }
#if COLMET_HAVE_LIBPFM
    auto pfm = resolve_libpfm_event(name);
    if (pfm)
        clocks_in_seconds(*pfm);
    if (pfm || pfm.error().code() != Errc::not_found)
        return pfm;
#endif
    return unknown_event(name, sysfs_root);
}

Result<std::vector<PerfEventSpec>> resolve_events(const std::vector<std::string> &names,
                                                  const std::filesystem::path &sysfs_root)
{
    if (names.empty())
        return Error::invalid("no event given");
    std::vector<PerfEventSpec> specs;
    specs.reserve(names.size());
    for (const auto &name : names) {
        auto spec = resolve_event(name, sysfs_root);
        if (!spec)
            return spec.error();
        specs.push_back(std::move(*spec));
    }
    return specs;
}

}  // namespace colmet::perf
