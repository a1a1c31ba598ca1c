// The 28 colmet names: exact type/config, the three names fixed since the
// original, units of the clocks, the "unknown event" message.
#include "perf/PerfEventSpec.hpp"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <set>
#include <string>

using namespace colmet;
using namespace colmet::perf;

namespace {

struct Expected {
    const char *name;
    uint32_t type;
    uint64_t config;
};

// Written from <linux/perf_event.h> and perf_event_open(2), not from the table
// under test: HW_CACHE config = cache | (op << 8) | (result << 16).
constexpr uint64_t cache(uint64_t id, uint64_t op, uint64_t result) { return id | (op << 8) | (result << 16); }

constexpr uint64_t k_l1d = PERF_COUNT_HW_CACHE_L1D, k_ll = PERF_COUNT_HW_CACHE_LL;
constexpr uint64_t k_dtlb = PERF_COUNT_HW_CACHE_DTLB, k_itlb = PERF_COUNT_HW_CACHE_ITLB;
constexpr uint64_t k_bpu = PERF_COUNT_HW_CACHE_BPU, k_node = PERF_COUNT_HW_CACHE_NODE;
constexpr uint64_t k_read = PERF_COUNT_HW_CACHE_OP_READ, k_write = PERF_COUNT_HW_CACHE_OP_WRITE;
constexpr uint64_t k_prefetch = PERF_COUNT_HW_CACHE_OP_PREFETCH;
constexpr uint64_t k_access = PERF_COUNT_HW_CACHE_RESULT_ACCESS, k_miss = PERF_COUNT_HW_CACHE_RESULT_MISS;

const Expected k_expected[] = {
    {"cpu_cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache_references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branch_instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus_cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"ref_cpu_cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cache_l1d", PERF_TYPE_HW_CACHE, cache(k_l1d, k_read, k_access)},
    {"cache_ll", PERF_TYPE_HW_CACHE, cache(k_ll, k_read, k_access)},
    {"cache_dtlb", PERF_TYPE_HW_CACHE, cache(k_dtlb, k_read, k_access)},
    {"cache_itlb", PERF_TYPE_HW_CACHE, cache(k_itlb, k_read, k_access)},
    {"cache_bpu", PERF_TYPE_HW_CACHE, cache(k_bpu, k_read, k_access)},
    {"cache_node", PERF_TYPE_HW_CACHE, cache(k_node, k_read, k_access)},
    {"cache_op_read", PERF_TYPE_HW_CACHE, cache(k_l1d, k_read, k_miss)},
    {"cache_op_prefetch", PERF_TYPE_HW_CACHE, cache(k_l1d, k_prefetch, k_access)},
    {"cache_result_access", PERF_TYPE_HW_CACHE, cache(k_l1d, k_write, k_access)},
    {"cpu_clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task_clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"page_faults_min", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"page_faults_maj", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"alignment_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
    {"dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY},
    {"bpf_output", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT},
};

// "L1D/READ/MISS" from a HW_CACHE config, to compare with the documented meaning.
std::string decode_cache(uint64_t config)
{
    static const char *const ids[] = {"L1D", "L1I", "LL", "DTLB", "ITLB", "BPU", "NODE"};
    static const char *const ops[] = {"READ", "WRITE", "PREFETCH"};
    static const char *const results[] = {"ACCESS", "MISS"};
    uint64_t id = config & 0xff, op = (config >> 8) & 0xff, result = (config >> 16) & 0xff;
    if (id >= 7 || op >= 3 || result >= 2 || (config >> 24) != 0)
        return "invalid";
    return std::string(ids[id]) + "/" + ops[op] + "/" + results[result];
}

}  // namespace

TEST(EventNamesTest, every_legacy_name_resolves_to_its_exact_type_and_config)
{
    ASSERT_EQ(std::size(k_expected), 28u);
    for (const Expected &e : k_expected) {
        SCOPED_TRACE(e.name);
        auto spec = resolve_event(e.name, "/nonexistent");
        ASSERT_TRUE(spec) << spec.error().message();
        EXPECT_EQ(spec->name, e.name);
        EXPECT_EQ(spec->type, e.type);
        EXPECT_EQ(spec->config, e.config);
        EXPECT_EQ(spec->config1, 0u);
        EXPECT_EQ(spec->config2, 0u);
    }
}

TEST(EventNamesTest, legacy_names_are_listed_in_the_original_table_order)
{
    const auto &names = legacy_event_names();
    ASSERT_EQ(names.size(), 28u);
    for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_STREQ(names[i].name, k_expected[i].name);
        EXPECT_NE(std::string(names[i].meaning), "");
    }
}

TEST(EventNamesTest, the_three_fixed_cache_names_are_distinct_real_configurations)
{
    // In the original, cache_op_read and cache_result_access were 0 (= cache_l1d)
    // and cache_op_prefetch was 2 (= cache_ll).
    auto read = resolve_event("cache_op_read");
    auto prefetch = resolve_event("cache_op_prefetch");
    auto access = resolve_event("cache_result_access");
    ASSERT_TRUE(read && prefetch && access);
    EXPECT_EQ(read->config, 0x10000u);      // L1D, READ, MISS
    EXPECT_EQ(prefetch->config, 0x00200u);  // L1D, PREFETCH, ACCESS
    EXPECT_EQ(access->config, 0x00100u);    // L1D, WRITE, ACCESS

    std::set<std::pair<uint32_t, uint64_t>> seen;
    for (const Expected &e : k_expected)
        EXPECT_TRUE(seen.insert({e.type, e.config}).second) << e.name << " repeats another name's configuration";
}

TEST(EventNamesTest, documented_meaning_matches_every_cache_config)
{
    for (const NamedEvent &n : legacy_event_names()) {
        auto spec = resolve_event(n.name);
        ASSERT_TRUE(spec);
        if (spec->type != PERF_TYPE_HW_CACHE)
            continue;
        std::string decoded = decode_cache(spec->config);
        EXPECT_NE(std::string(n.meaning).find("PERF_TYPE_HW_CACHE " + decoded), std::string::npos)
            << n.name << ": meaning '" << n.meaning << "' but config is " << decoded;
    }
    auto meaning_of = [](const std::string &name) {
        for (const NamedEvent &n : legacy_event_names())
            if (name == n.name)
                return std::string(n.meaning);
        return std::string();
    };
    EXPECT_EQ(meaning_of("cache_op_read").rfind("L1 data cache read misses", 0), 0u);
    EXPECT_EQ(meaning_of("cache_op_prefetch").rfind("L1 data cache prefetch accesses", 0), 0u);
    EXPECT_EQ(meaning_of("cache_result_access").rfind("L1 data cache write accesses", 0), 0u);
}

TEST(EventNamesTest, clocks_are_reported_in_seconds_and_counts_as_is)
{
    for (const char *clock : {"cpu_clock", "task_clock"}) {
        auto spec = resolve_event(clock);
        ASSERT_TRUE(spec);
        EXPECT_EQ(spec->unit, "s");
        EXPECT_DOUBLE_EQ(spec->scale, 1e-9);
    }
    for (const NamedEvent &n : legacy_event_names()) {
        std::string name = n.name;
        if (name == "cpu_clock" || name == "task_clock")
            continue;
        auto spec = resolve_event(name);
        ASSERT_TRUE(spec);
        EXPECT_EQ(spec->unit, "1") << name;
        EXPECT_EQ(spec->scale, 1.0) << name;
    }
}

TEST(EventNamesTest, unknown_name_says_which_forms_exist)
{
    auto r = resolve_event("xyz", "/nonexistent");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::invalid);
    const std::string &m = r.error().message();
    std::string head = "unknown perf event 'xyz': use one of the 28 colmet names (cpu_cycles, instructions, ";
    EXPECT_EQ(m.rfind(head, 0), 0u) << m;
    EXPECT_NE(m.find("bpf_output)"), std::string::npos) << m;
    std::string pmu = "a PMU event written pmu/event/ (see /nonexistent/bus/event_source/devices)";
    EXPECT_NE(m.find(pmu), std::string::npos) << m;
    EXPECT_EQ(m.find("libpfm4") != std::string::npos, have_libpfm()) << m;
}

TEST(EventNamesTest, names_are_case_sensitive_and_checked_for_bad_bytes)
{
    EXPECT_FALSE(resolve_event("CPU_CYCLES", "/nonexistent"));
    auto empty = resolve_event("");
    ASSERT_FALSE(empty);
    EXPECT_EQ(empty.error().code(), Errc::invalid);
    auto blank = resolve_event("cpu_cycles ");
    ASSERT_FALSE(blank);
    EXPECT_NE(blank.error().message().find("blanks or control characters"), std::string::npos);
    auto ctrl = resolve_event(std::string("cpu\x01", 4));
    ASSERT_FALSE(ctrl);
    EXPECT_NE(ctrl.error().message().find("'cpu?'"), std::string::npos) << ctrl.error().message();
    auto longer = resolve_event(std::string(300, 'a'));
    ASSERT_FALSE(longer);
    EXPECT_NE(longer.error().message().find("longer than 256 bytes"), std::string::npos);
}
