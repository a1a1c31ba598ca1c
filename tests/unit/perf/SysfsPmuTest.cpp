// "pmu/event/" events resolved through sysfs fixture trees
// (tests/fixtures/perfhw/sys) and small FakeTree PMUs.
#include "perf/SysfsPmu.hpp"
#include "FakeTree.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"
#include "perf/PerfEventSpec.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace colmet;
using namespace colmet::perf;

namespace {

std::filesystem::path sys() { return test::fixture("perfhw/sys"); }

PerfEventSpec must_resolve(std::string_view name, const std::filesystem::path &root = sys())
{
    auto r = resolve_event(name, root);
    EXPECT_TRUE(r) << name << ": " << r.error().message();
    return r ? *r : PerfEventSpec{};
}

// The message of a failed resolve, checking its category.
std::string failure(std::string_view name, Errc code = Errc::invalid, const std::filesystem::path &root = sys())
{
    auto r = resolve_event(name, root);
    EXPECT_FALSE(r) << name << " resolved";
    if (r)
        return "";
    EXPECT_EQ(r.error().code(), code) << name << ": " << r.error().message();
    return r.error().message();
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

TEST(SysfsPmuTest, intel_cpu_event_aliases)
{
    auto cycles = must_resolve("cpu/cpu-cycles/");
    EXPECT_EQ(cycles.name, "cpu/cpu-cycles/");
    EXPECT_EQ(cycles.type, 4u);
    EXPECT_EQ(cycles.config, 0x3cu);
    EXPECT_EQ(cycles.unit, "1");
    EXPECT_EQ(cycles.scale, 1.0);
    EXPECT_EQ(must_resolve("cpu/instructions/").config, 0xc0u);
    EXPECT_EQ(must_resolve("cpu/cache-misses/").config, 0x412eu);
    auto loads = must_resolve("cpu/mem-loads/");  // ldlat lives in config1
    EXPECT_EQ(loads.config, 0x1cdu);
    EXPECT_EQ(loads.config1, 3u);
    EXPECT_EQ(loads.config2, 0u);
}

TEST(SysfsPmuTest, raw_format_terms)
{
    EXPECT_EQ(must_resolve("cpu/event=0x3c,umask=0x00/").config, 0x3cu);
    EXPECT_EQ(must_resolve("cpu/event=60,umask=0X1/").config, 0x13cu);
    // Bare format keys mean 1: edge is bit 18, inv bit 23; cmask is bits 24-31.
    uint64_t want = 0xd1u | (0x01u << 8) | (1u << 18) | (1u << 23) | (2u << 24);
    EXPECT_EQ(must_resolve("cpu/event=0xd1,umask=0x01,edge,inv,cmask=2/").config, want);
    EXPECT_EQ(must_resolve("cpu/config=0x1234,config1=7,config2=9/").config1, 7u);
    EXPECT_EQ(must_resolve("cpu/config2=9/").config2, 9u);
    auto full = must_resolve("msr/event=0xffffffffffffffff/");  // a 64-bit field
    EXPECT_EQ(full.config, ~uint64_t{0});
}

TEST(SysfsPmuTest, user_terms_add_to_and_override_the_alias)
{
    EXPECT_EQ(must_resolve("cpu/cache-misses,umask=0x4f/").config, 0x4f2eu);
    EXPECT_EQ(must_resolve("cpu/umask=0x4f,cache-misses/").config, 0x4f2eu);
    EXPECT_EQ(must_resolve("cpu/cpu-cycles,cmask=1,inv/").config, 0x3cu | (1u << 23) | (1u << 24));
    EXPECT_EQ(must_resolve("cpu/mem-loads,ldlat=0x100/").config1, 0x100u);
}

TEST(SysfsPmuTest, power_event_takes_scale_and_unit_from_sysfs)
{
    auto pkg = must_resolve("power/energy-pkg/");
    EXPECT_EQ(pkg.type, 11u);
    EXPECT_EQ(pkg.config, 0x02u);
    EXPECT_DOUBLE_EQ(pkg.scale, 2.3283064365386962890625e-10);
    EXPECT_EQ(pkg.unit, "J");
    auto slots = must_resolve("cpu/topdown-total-slots/");  // .scale without .unit
    EXPECT_EQ(slots.scale, 2.0);
    EXPECT_EQ(slots.unit, "1");
    // Raw terms do not pick up an alias's scale.
    EXPECT_EQ(must_resolve("power/event=0x02/").unit, "1");
}

TEST(SysfsPmuTest, msr_tsc_of_this_vm_layout)
{
    auto tsc = must_resolve("msr/tsc/");
    EXPECT_EQ(tsc.type, 9u);
    EXPECT_EQ(tsc.config, 0u);
}

TEST(SysfsPmuTest, software_clock_written_raw_is_in_seconds)
{
    auto clock = must_resolve("software/config=1/");
    EXPECT_EQ(clock.type, 1u);
    EXPECT_EQ(clock.config, 1u);
    EXPECT_EQ(clock.unit, "s");
    EXPECT_DOUBLE_EQ(clock.scale, 1e-9);
}

TEST(SysfsPmuTest, split_bit_ranges_place_high_bits_in_the_second_range)
{
    // AMD core PMUs describe their 12-bit event select this way.
    test::FakeTree t;
    t.write("bus/event_source/devices/cpu/type", "4\n");
    t.write("bus/event_source/devices/cpu/format/event", "config:0-7,32-35\n");
    t.write("bus/event_source/devices/cpu/format/umask", "config:8-15\n");
    t.write("bus/event_source/devices/cpu/events/ls-refills", "event=0x1c0,umask=0x3\n");
    auto r = must_resolve("cpu/ls-refills/", t.root());
    EXPECT_EQ(r.config, 0xc0u | (0x3u << 8) | (uint64_t{1} << 32));
    EXPECT_EQ(must_resolve("cpu/event=0xfff/", t.root()).config, 0xffu | (uint64_t{0xf} << 32));
    std::string m = failure("cpu/event=0x1000/", Errc::invalid, t.root());
    EXPECT_HAS(m, "format key 'event' of PMU 'cpu': value 0x1000 does not fit in its 12 bits");
}

TEST(SysfsPmuTest, unknown_pmu_names_the_directory)
{
    EXPECT_EQ(failure("xyz/foo/"), "no PMU 'xyz' in " + (sys() / "bus/event_source/devices").string());
}

TEST(SysfsPmuTest, unknown_event_lists_the_known_ones)
{
    EXPECT_EQ(failure("msr/foo/"), "PMU 'msr' has no event 'foo' (known: tsc)");
    std::string power = " (known: energy-cores, energy-pkg, energy-ram)";
    EXPECT_EQ(failure("power/energy-gpu/"), "PMU 'power' has no event 'energy-gpu'" + power);
    EXPECT_EQ(failure("power/energy-pkg.scale/"), "PMU 'power' has no event 'energy-pkg.scale'" + power);
    EXPECT_EQ(failure("software/cpu-clock/"), "PMU 'software' has no event 'cpu-clock' (known: none)");
    std::string m = failure("cpu/cycles/");
    EXPECT_HAS(m, "PMU 'cpu' has no event 'cycles' (known: branch-instructions, branch-misses, bus-cycles,");
    EXPECT_EQ(m.find(".scale"), std::string::npos) << m;
}

TEST(SysfsPmuTest, unknown_format_key_is_an_error)
{
    std::string m = failure("cpu/event=0x3c,foo=1/");
    EXPECT_HAS(m, "PMU 'cpu' has no format key 'foo' (known: any, cmask, edge, event, in_tx, in_tx_cp, inv, ldlat, "
                  "pc, umask; raw: config, config1, config2)");
    EXPECT_HAS(failure("msr/umask=1/"), "PMU 'msr' has no format key 'umask' (known: event;");
}

TEST(SysfsPmuTest, values_wider_than_their_field_are_errors)
{
    EXPECT_HAS(failure("cpu/event=0x100/"), "key 'event' of PMU 'cpu': value 0x100 does not fit in its 8 bits");
    EXPECT_HAS(failure("cpu/cpu-cycles,edge=2/"), "key 'edge' of PMU 'cpu': value 0x2 does not fit in its 1 bit");
    EXPECT_HAS(failure("cpu/ldlat=0x10000/"), "does not fit in its 16 bits");
    EXPECT_HAS(failure("cpu/event=0x10000000000000000/"), "is not a number");
    EXPECT_HAS(failure("cpu/event=-1/"), "is not a number");
    EXPECT_HAS(failure("cpu/event=/"), "is not a number");
    EXPECT_HAS(failure("cpu/event=0x/"), "is not a number");
}

TEST(SysfsPmuTest, path_tricks_cannot_leave_the_devices_directory)
{
    EXPECT_HAS(failure("../x/y/"), "'..' is not a PMU name");
    EXPECT_HAS(failure("./msr/"), "'.' is not a PMU name");
    EXPECT_HAS(failure(".../tsc/"), "'...' is not a PMU name");
    EXPECT_HAS(failure("/msr/tsc/"), "'' is not a PMU name");
    EXPECT_HAS(failure("../../../../etc/passwd/"), "'..' is not a PMU name");
    EXPECT_HAS(failure("msr/../"), "'..' is not a term");
    EXPECT_HAS(failure("msr/tsc/../"), "nothing may follow the closing '/'");
    EXPECT_HAS(failure("msr/event=1,..=1/"), "'..=1' is not a term");
    EXPECT_HAS(failure("cpu/format/"), "PMU 'cpu' has no event 'format'");
    EXPECT_HAS(failure("cpu/event\\x/"), "is not a term");
}

TEST(SysfsPmuTest, malformed_event_strings)
{
    EXPECT_HAS(failure("cpu//"), "names no event");
    EXPECT_HAS(failure("cpu/event=0x3c,,umask=1/"), "has an empty term");
    EXPECT_HAS(failure("cpu/event=0x3c,/"), "has an empty term");
    EXPECT_HAS(failure("cpu/,event=0x3c/"), "has an empty term");
    EXPECT_HAS(failure("cpu/event=0x3c,event=0x3d/"), "term 'event' given twice");
    EXPECT_HAS(failure("cpu/cpu-cycles,instructions/"), "names two events ('cpu-cycles' and 'instructions')");
    EXPECT_HAS(failure("cpu/cpu-cycles/u"), "modifiers");
    EXPECT_HAS(failure("cpu/cpu-cycles"), "closing '/' missing");
    EXPECT_HAS(failure("cpu/a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q/"), "more than 16 terms");
}

TEST(SysfsPmuTest, malformed_sysfs_files_are_reported)
{
    test::FakeTree t;
    t.write("bus/event_source/devices/bad/type", "four\n");
    t.write("bus/event_source/devices/odd/type", "12\n");
    t.write("bus/event_source/devices/odd/format/event", "bogus\n");
    t.write("bus/event_source/devices/odd/format/wide", "config3:0-7\n");
    t.write("bus/event_source/devices/odd/events/e1", "umask=1\n");
    t.write("bus/event_source/devices/odd/events/e2", "\n");
    t.write("bus/event_source/devices/odd/format/good", "config:0-7\n");
    t.write("bus/event_source/devices/odd/events/e3", "good=1\n");
    t.write("bus/event_source/devices/odd/events/e3.scale", "lots\n");
    EXPECT_HAS(failure("bad/x/", Errc::parse, t.root()), "not a PMU type number");
    EXPECT_HAS(failure("odd/event=1/", Errc::parse, t.root()), "format key 'event' of PMU 'odd': format 'bogus'");
    EXPECT_HAS(failure("odd/wide=1/", Errc::unsupported, t.root()), "only config, config1 and config2");
    EXPECT_HAS(failure("odd/e1/", Errc::parse, t.root()), "uses format key 'umask' that format/ does not have");
    EXPECT_HAS(failure("odd/e2/", Errc::parse, t.root()), "events/e2 of PMU 'odd' is empty");
    EXPECT_HAS(failure("odd/e3/", Errc::parse, t.root()), "e3.scale: not a positive number");
}

TEST(FormatFieldTest, parses_single_bits_ranges_and_split_ranges)
{
    auto f = parse_format_field("config1:0-15\n");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->word, 1u);
    EXPECT_EQ(field_width(*f), 16u);
    auto bit = parse_format_field("config:18");
    ASSERT_TRUE(bit);
    EXPECT_EQ(bit->ranges, (std::vector<std::pair<unsigned, unsigned>>{{18, 18}}));
    auto split = parse_format_field("config2:0-7,32-35");
    ASSERT_TRUE(split);
    EXPECT_EQ(split->word, 2u);
    EXPECT_EQ(field_width(*split), 12u);
    for (const char *bad : {"", "config", "config:", "config:8-7", "config:64", "config:0-7,4-9", "cfg:0-7",
                            "config:a-b", "config:0-7,"}) {
        auto r = parse_format_field(bad);
        EXPECT_FALSE(r) << bad;
        if (!r) {
            EXPECT_EQ(r.error().code(), Errc::parse) << bad;
        }
    }
}

TEST(FormatFieldTest, apply_clears_the_field_before_setting_it)
{
    auto f = parse_format_field("config:8-15");
    ASSERT_TRUE(f);
    ConfigWords words{0xffffu, 0, 0};
    ASSERT_TRUE(apply_format_field(*f, 0x12, words, "umask"));
    EXPECT_EQ(words[0], 0x12ffu);
}

TEST(SysfsNamesTest, units_and_names)
{
    EXPECT_EQ(map_unit("Joules\n"), "J");
    EXPECT_EQ(map_unit("MiB"), "MiB");
    EXPECT_EQ(map_unit(""), "1");
    EXPECT_TRUE(valid_sysfs_name("uncore_imc_0"));
    EXPECT_TRUE(valid_sysfs_name("energy-pkg"));
    EXPECT_FALSE(valid_sysfs_name(".."));
    EXPECT_FALSE(valid_sysfs_name("a/b"));
    EXPECT_FALSE(valid_sysfs_name(""));
}

TEST(RealSysfsTest, resolves_msr_tsc_on_this_machine)
{
    std::filesystem::path msr = "/sys/bus/event_source/devices/msr";
    std::error_code ec;
    if (!std::filesystem::exists(msr / "events" / "tsc", ec))
        GTEST_SKIP() << msr.string() << "/events/tsc does not exist on this machine (no msr PMU)";
    auto type_text = read_file(msr / "type");
    ASSERT_TRUE(type_text) << type_text.error().message();
    auto type = text::parse_u64(*type_text);
    ASSERT_TRUE(type);
    auto tsc = resolve_event("msr/tsc/", "/sys");
    ASSERT_TRUE(tsc) << tsc.error().message();
    EXPECT_EQ(tsc->type, *type);
    EXPECT_EQ(tsc->config, 0u);  // events/tsc is "event=0x00" on every x86 kernel
    EXPECT_EQ(tsc->unit, "1");
}
