#include "perf/SysfsPmu.hpp"

#include "common/file_io.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace colmet::perf {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_terms = 16;
constexpr size_t k_max_listed = 30;  // names shown in an "unknown" message

// Files beside an event alias that describe it; they are not events.
constexpr std::array<std::string_view, 4> k_event_suffixes = {".scale", ".unit", ".per-pkg", ".snapshot"};

bool has_event_suffix(std::string_view name)
{
    return std::any_of(k_event_suffixes.begin(), k_event_suffixes.end(),
                       [&](std::string_view s) { return name.size() > s.size() && name.ends_with(s); });
}

std::string hex(uint64_t v)
{
    char buf[20];
    auto res = std::to_chars(buf, buf + sizeof buf, v, 16);
    return "0x" + std::string(buf, res.ptr);
}

// Cut the text up to the next comma off `rest`; `more` says whether a comma
// followed (so "a," yields "a" then an empty item).
std::string_view next_item(std::string_view &rest, bool &more)
{
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    more = comma != std::string_view::npos;
    rest = more ? rest.substr(comma + 1) : std::string_view();
    return item;
}

// The file's content, or nullopt when it does not exist.
Result<std::optional<std::string>> read_optional(const fs::path &path)
{
    auto r = read_file(path);
    if (r)
        return std::optional<std::string>(std::move(*r));
    int err = r.error().sys_errno();
    if (r.error().code() == Errc::system && (err == ENOENT || err == ENOTDIR))
        return std::optional<std::string>();
    return r.error();
}

// "a, b, c" of the entries of dir (event aliases without their .scale/.unit
// companions), sorted; "none" when there are none.
std::string list_names(const fs::path &dir, bool events)
{
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string n = it->path().filename().string();
        if (!(events && has_event_suffix(n)))
            names.push_back(std::move(n));
    }
    if (names.empty())
        return "none";
    std::sort(names.begin(), names.end());
    std::string text;
    for (size_t i = 0; i < names.size() && i < k_max_listed; ++i)
        text += (i > 0 ? ", " : "") + names[i];
    if (names.size() > k_max_listed)
        text += ", ...";
    return text;
}

struct Pmu {
    std::string name;
    fs::path dir;  // <sysfs_root>/bus/event_source/devices/<name>
};

struct Term {
    std::string key;
    uint64_t value = 0;
    bool from_user = false;  // false: from the event alias file
};

struct SplitTerm {
    std::string_view key;
    std::optional<uint64_t> value;  // nullopt for a bare key
};

Result<SplitTerm> split_term(std::string_view term)
{
    SplitTerm out;
    auto eq = term.find('=');
    out.key = term.substr(0, eq);
    if (!valid_sysfs_name(out.key))
        return Error::invalid("'" + text::printable(term) +
                              "' is not a term (key or key=value, key of [A-Za-z0-9_.-])");
    if (eq != std::string_view::npos) {
        auto v = parse_term_value(term.substr(eq + 1));
        if (!v)
            return v.error().with_context("term '" + text::printable(term) + "'");
        out.value = *v;
    }
    return out;
}

// Record key=value. A user term overrides the alias's term for the same key;
// the same key twice from the user is a mistake.
Result<void> set_term(std::vector<Term> &terms, std::string_view key, uint64_t value, bool from_user)
{
    for (Term &t : terms) {
        if (t.key != key)
            continue;
        if (t.from_user == from_user)
            return Error::invalid("term '" + std::string(key) + "' given twice");
        if (from_user)  // whichever comes first, the user's value wins
            t = Term{std::string(key), value, true};
        return ok();
    }
    terms.push_back(Term{std::string(key), value, from_user});
    return ok();
}

Result<void> add_alias_terms(const Pmu &pmu, std::string_view event, std::string_view content, std::vector<Term> &terms)
{
    std::string_view rest = text::trim(content);
    std::string where = "events/" + std::string(event) + " of PMU '" + pmu.name + "'";
    if (rest.empty())
        return Error::parse(where + " is empty");
    for (bool more = true; more;) {
        std::string_view item = text::trim(next_item(rest, more));
        auto st = split_term(item);
        if (!st)
            return Error::parse(where + ": " + st.error().message());
        if (auto r = set_term(terms, st->key, st->value.value_or(1), false); !r)
            return Error::parse(where + ": " + r.error().message());
    }
    return ok();
}

Result<void> apply_term(const Pmu &pmu, const Term &term, ConfigWords &words)
{
    auto file = read_optional(pmu.dir / "format" / term.key);
    if (!file)
        return file.error();
    std::string what = "format key '" + term.key + "' of PMU '" + pmu.name + "'";
    if (file->has_value()) {
        auto field = parse_format_field(**file);
        if (!field)
            return field.error().with_context(what);
        return apply_format_field(*field, term.value, words, what);
    }
    if (term.key == "config" || term.key == "config1" || term.key == "config2") {
        words[term.key == "config" ? 0 : static_cast<size_t>(term.key.back() - '0')] = term.value;
        return ok();
    }
    std::string known = list_names(pmu.dir / "format", false);
    if (!term.from_user)
        return Error::parse("an event alias of PMU '" + pmu.name + "' uses format key '" + term.key +
                            "' that format/ does not have (known: " + known + ")");
    return Error::invalid("PMU '" + pmu.name + "' has no format key '" + term.key + "' (known: " + known +
                          "; raw: config, config1, config2)");
}

// A term without '=': an event alias from events/ (at most one per event) or
// a format key meaning 1.
Result<void> add_bare_term(const Pmu &pmu, std::string_view key_view, std::vector<Term> &terms, std::string &event,
                           const std::string &shown)
{
    std::string key(key_view);
    Result<std::optional<std::string>> alias = std::optional<std::string>();
    if (!has_event_suffix(key))
        alias = read_optional(pmu.dir / "events" / key);
    if (!alias)
        return alias.error();
    if (alias->has_value()) {
        if (!event.empty())
            return Error::invalid("perf event '" + shown + "' names two events ('" + event + "' and '" + key + "')");
        event = key;
        return add_alias_terms(pmu, key, **alias, terms);
    }
    auto format = read_optional(pmu.dir / "format" / key);
    if (!format)
        return format.error();
    if (!format->has_value())
        return Error::invalid("PMU '" + pmu.name + "' has no event '" + key +
                              "' (known: " + list_names(pmu.dir / "events", true) + ")");
    if (auto r = set_term(terms, key, 1, true); !r)
        return r.error().with_context("perf event '" + shown + "'");
    return ok();
}

Result<uint32_t> read_pmu_type(const Pmu &pmu, const fs::path &devices)
{
    auto text = read_optional(pmu.dir / "type");
    if (!text)
        return text.error();
    if (!text->has_value())
        return Error::invalid("no PMU '" + pmu.name + "' in " + devices.string());
    auto type = text::parse_u64(**text);
    if (!type || *type > std::numeric_limits<uint32_t>::max())
        return Error::parse((pmu.dir / "type").string() + ": not a PMU type number");
    return static_cast<uint32_t>(*type);
}

Result<void> set_scale_and_unit(const Pmu &pmu, const std::string &event, PerfEventSpec &spec)
{
    fs::path events = pmu.dir / "events";
    auto scale = read_optional(events / (event + ".scale"));
    if (!scale)
        return scale.error();
    if (scale->has_value()) {
        auto v = text::parse_double(**scale);
        if (!v || !std::isfinite(*v) || *v <= 0)
            return Error::parse((events / (event + ".scale")).string() + ": not a positive number");
        spec.scale = *v;
    }
    auto unit = read_optional(events / (event + ".unit"));
    if (!unit)
        return unit.error();
    if (unit->has_value())
        spec.unit = map_unit(**unit);
    return ok();
}

}  // namespace

fs::path pmu_devices_dir(const fs::path &sysfs_root) { return sysfs_root / "bus" / "event_source" / "devices"; }

Result<FormatField> parse_format_field(std::string_view text)
{
    text = text::trim(text);
    auto colon = text.find(':');
    std::string_view word = text.substr(0, colon);
    FormatField field;
    if (word == "config" || word == "config1" || word == "config2")
        field.word = word == "config" ? 0 : static_cast<unsigned>(word.back() - '0');
    else if (word.starts_with("config") && colon != std::string_view::npos)
        return Error(Errc::unsupported,
                     "format '" + text::printable(text) + "': only config, config1 and config2 are supported");
    else
        return Error::parse("format '" + text::printable(text) + "' is not config[12]:<bits>");
    std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
    uint64_t used = 0;
    for (bool more = true; more;) {
        std::string_view range = next_item(rest, more);
        auto dash = range.find('-');
        auto lo = text::parse_u64(range.substr(0, dash));
        auto hi = dash == std::string_view::npos ? lo : text::parse_u64(range.substr(dash + 1));
        if (!lo || !hi || *lo > *hi || *hi > 63)
            return Error::parse("format '" + text::printable(text) + "': bad bit range '" + text::printable(range) +
                                "'");
        unsigned n = static_cast<unsigned>(*hi - *lo + 1);
        uint64_t mask = (n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1) << *lo;
        if (used & mask)
            return Error::parse("format '" + text::printable(text) + "': bit ranges overlap");
        used |= mask;
        field.ranges.emplace_back(static_cast<unsigned>(*lo), static_cast<unsigned>(*hi));
    }
    return field;
}

unsigned field_width(const FormatField &field)
{
    unsigned width = 0;
    for (auto [lo, hi] : field.ranges)
        width += hi - lo + 1;
    return width;
}

Result<void> apply_format_field(const FormatField &field, uint64_t value, ConfigWords &words, const std::string &what)
{
    unsigned width = field_width(field);
    if (width < 64 && (value >> width) != 0)
        return Error::invalid(what + ": value " + hex(value) + " does not fit in its " + std::to_string(width) +
                              (width == 1 ? " bit" : " bits"));
    uint64_t rest = value;
    uint64_t &word = words.at(field.word);
    for (auto [lo, hi] : field.ranges) {
        unsigned n = hi - lo + 1;
        uint64_t mask = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
        word = (word & ~(mask << lo)) | ((rest & mask) << lo);
        rest = n == 64 ? 0 : rest >> n;
    }
    return ok();
}

Result<uint64_t> parse_term_value(std::string_view text)
{
    text = text::trim(text);
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        text.remove_prefix(2);
        base = 16;
    }
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
        return Error::invalid("'" + text::printable(text) + "' is not a number (decimal or 0x hex, at most 64 bits)");
    return value;
}

bool valid_sysfs_name(std::string_view name)
{
    constexpr std::string_view k_allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
    return !name.empty() && name.size() <= 128 && name.find_first_not_of(k_allowed) == std::string_view::npos &&
           name.find_first_not_of('.') != std::string_view::npos;  // not ".", ".." or "..."
}

std::string map_unit(std::string_view sysfs_unit)
{
    static constexpr std::pair<std::string_view, std::string_view> k_units[] = {
        {"", "1"}, {"Joules", "J"}, {"Watts", "W"}, {"Seconds", "s"}, {"seconds", "s"}, {"Bytes", "B"}, {"bytes", "B"}};
    sysfs_unit = text::trim(sysfs_unit);
    for (auto [from, to] : k_units)
        if (sysfs_unit == from)
            return std::string(to);
    return text::printable(sysfs_unit);
}

Result<PerfEventSpec> resolve_pmu_event(std::string_view name, const fs::path &sysfs_root)
{
    std::string shown = text::printable(name);
    auto first = name.find('/');
    auto second = first == std::string_view::npos ? first : name.find('/', first + 1);
    if (second == std::string_view::npos)
        return Error::invalid("perf event '" + shown + "': a PMU event is written pmu/event/ (closing '/' missing)");
    Pmu pmu{std::string(name.substr(0, first)), {}};
    if (!valid_sysfs_name(pmu.name))
        return Error::invalid("perf event '" + shown + "': '" + text::printable(pmu.name) +
                              "' is not a PMU name (one path component of [A-Za-z0-9_.-])");
    if (second + 1 != name.size())
        return Error::invalid("perf event '" + shown +
                              "': nothing may follow the closing '/' (modifiers such as /u are not supported)");
    fs::path devices = pmu_devices_dir(sysfs_root);
    pmu.dir = devices / pmu.name;
    std::string_view body = name.substr(first + 1, second - first - 1);
    if (body.empty())
        return Error::invalid("perf event '" + shown + "' names no event (write pmu/event/)");
    if (std::count(body.begin(), body.end(), ',') >= static_cast<std::ptrdiff_t>(k_max_terms))
        return Error::invalid("perf event '" + shown + "' has more than " + std::to_string(k_max_terms) + " terms");
    auto type = read_pmu_type(pmu, devices);
    if (!type)
        return type.error();

    std::vector<Term> terms;
    std::string event;  // the alias used, if any
    for (bool more = true; more;) {
        std::string_view item = next_item(body, more);
        if (item.empty())
            return Error::invalid("perf event '" + shown + "' has an empty term");
        auto st = split_term(item);
        if (!st)
            return st.error().with_context("perf event '" + shown + "'");
        if (st->value) {
            if (auto r = set_term(terms, st->key, *st->value, true); !r)
                return r.error().with_context("perf event '" + shown + "'");
            continue;
        }
        if (auto r = add_bare_term(pmu, st->key, terms, event, shown); !r)
            return r.error();
    }

    ConfigWords words{};
    for (const Term &t : terms)
        if (auto r = apply_term(pmu, t, words); !r)
            return r.error();
    PerfEventSpec spec{
        .name = std::string(name), .type = *type, .config = words[0], .config1 = words[1], .config2 = words[2]};
    if (!event.empty())
        if (auto r = set_scale_and_unit(pmu, event, spec); !r)
            return r.error();
    return spec;
}

}  // namespace colmet::perf
