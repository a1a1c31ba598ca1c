// Strict decoder: every field is type- and bound-checked, and every failure
// names the offending field. The frame is walked item by item in place
// (reader.hpp): nothing is allocated for the msgpack structure, strings are
// compared where they lie in the frame, and every declared length is checked
// against its limit before anything relies on it. The location
// of a field is only turned into text when decoding fails, so the success
// path does no string formatting.
#include "wire/decode.hpp"

#include "common/names.hpp"
#include "wire/reader.hpp"
#include "wire/rules.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace colmet::wire {
namespace {

using mp::Cursor;
using mp::Item;
using mp::Type;
using rules::printable_ascii;
using rules::printable_text;

bool snake(std::string_view s) { return rules::snake_name(s, 64); }

// s == lit, with the comparison of a constant number of bytes inlined (the
// decoder compares every key with the names of the schema).
template <size_t N>
inline bool is(std::string_view s, const char (&lit)[N])
{
    return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

// Where a field is: "kind", "backends[1].name", "backends[1].metrics[3].unit".
struct Loc {
    const char *field = nullptr;  // last component (may be null)
    int backend = -1;
    const char *list = nullptr;  // "metrics" or "values"
    int index = -1;

    Loc at(const char *f) const
    {
        Loc l = *this;
        l.field = f;
        return l;
    }
    std::string str() const
    {
        std::string s;
        if (backend >= 0)
            s = "backends[" + std::to_string(backend) + "]";
        if (list)
            s += std::string(".") + list + "[" + std::to_string(index) + "]";
        if (field)
            s += (s.empty() ? "" : ".") + std::string(field);
        return s;
    }
};

struct Fail {
    std::string message;
};

[[noreturn]] void fail(const Loc &where, const std::string &what) { throw Fail{where.str() + ": " + what}; }
[[noreturn]] void fail(const std::string &where, const std::string &what) { throw Fail{where + ": " + what}; }

const char *type_name(const Item &o)
{
    switch (o.type) {
    case Type::nil:
        return "nil";
    case Type::boolean:
        return "boolean";
    case Type::uint:
    case Type::sint:
        return "integer";
    case Type::f32:
    case Type::f64:
        return "float";
    case Type::str:
        return "string";
    case Type::bin:
        return "binary";
    case Type::array:
        return "array";
    case Type::map:
        return "map";
    case Type::ext:
        return "extension";
    }
    return "unknown";
}

template <typename Where>
std::string_view as_str(const Item &o, const Where &where, size_t max_len)
{
    if (o.type != Type::str)
        fail(where, std::string("expected a string, got ") + type_name(o));
    if (o.size > max_len)
        fail(where, "string of " + std::to_string(o.size) + " bytes exceeds the limit of " + std::to_string(max_len));
    return o.view();
}

uint64_t as_uint(const Item &o, const Loc &where)
{
    if (o.type != Type::uint)
        fail(where, std::string("expected an unsigned integer, got ") + type_name(o));
    return o.u;
}

// An array header within max_len elements; returns the element count.
template <typename Where>
uint32_t as_array(const Item &o, const Where &where, size_t max_len)
{
    if (o.type != Type::array)
        fail(where, std::string("expected an array, got ") + type_name(o));
    if (o.size > max_len)
        fail(where, "array of " + std::to_string(o.size) + " elements exceeds the limit of " + std::to_string(max_len));
    return o.size;
}

template <typename Where>
uint32_t as_map(const Item &o, const Where &where, size_t max_len)
{
    if (o.type != Type::map)
        fail(where, std::string("expected a map, got ") + type_name(o));
    if (o.size > max_len)
        fail(where, "map of " + std::to_string(o.size) + " entries exceeds the limit of " + std::to_string(max_len));
    return o.size;
}

double as_value(const Item &o, const Loc &where)
{
    switch (o.type) {
    case Type::nil:
        return std::numeric_limits<double>::quiet_NaN();
    case Type::uint:
        return static_cast<double>(o.u);
    case Type::sint:
        return static_cast<double>(o.i);
    case Type::f32:
    case Type::f64:
        if (std::isinf(o.f))
            fail(where, "value is not finite");
        return o.f;  // NaN is accepted and means missing, like nil
    default:
        fail(where, std::string("expected a number or nil, got ") + type_name(o));
    }
}

// Tracks which keys of a map were seen, to reject duplicates and report
// missing required ones.
class Seen {
public:
    bool mark(unsigned bit)
    {
        if (m_bits & (1u << bit))
            return false;
        m_bits |= 1u << bit;
        return true;
    }
    bool has(unsigned bit) const { return (m_bits & (1u << bit)) != 0; }

private:
    unsigned m_bits = 0;
};

// Returns true when the name is the one d already held.
bool decode_metric(Cursor &c, const Loc &where, MetricDescriptor &d)
{
    const uint32_t size = as_array(c.next(), where, 3);
    if (size != 3)
        fail(where, "expected [name, unit, kind], got an array of " + std::to_string(size));
    auto name = as_str(c.next(), where.at("name"), k_max_name_length);
    if (name.empty() || !printable_ascii(name))
        fail(where.at("name"), "must be 1 to 128 bytes of printable ASCII");
    auto unit = as_str(c.next(), where.at("unit"), k_max_unit_length);
    if (unit.empty() || !printable_ascii(unit))
        fail(where.at("unit"), "must be 1 to 16 bytes of printable ASCII");
    auto kind = as_str(c.next(), where.at("kind"), 16);
    if (is(kind, "counter"))
        d.kind = MetricKind::counter;
    else if (is(kind, "gauge"))
        d.kind = MetricKind::gauge;
    else
        fail(where.at("kind"), "must be \"counter\" or \"gauge\", got \"" + std::string(kind) + "\"");
    bool same = d.name == name;
    if (!same)
        d.name.assign(name);
    d.unit.assign(unit);
    return same;
}

// The metrics array at the cursor, into blk.metrics and blk.metrics_wire.
void decode_metrics(Cursor &c, const Loc &where, BackendBlock &blk)
{
    // A sampler sends the same descriptors in every message: when their
    // bytes equal those this slot decoded last time (decode() clears every
    // slot after a failure, so what is there passed every check), they are
    // the same descriptors and need no decoding.
    if (blk.metrics_wire && c.skip_if_equal(*blk.metrics_wire))
        return;
    blk.metrics_wire.reset();  // until the descriptors below pass
    const char *begin = c.pos();
    const uint32_t n = as_array(c.next(), where.at("metrics"), k_max_metrics_per_backend);
    Loc metric_loc = where;
    metric_loc.list = "metrics";
    // The uniqueness check runs only when some name changed.
    bool same_names = blk.metrics.size() == n;
    blk.metrics.resize(n);
    for (uint32_t m = 0; m < n; ++m) {
        metric_loc.index = static_cast<int>(m);
        same_names = decode_metric(c, metric_loc, blk.metrics[m]) && same_names;
    }
    if (!same_names) {
        const size_t m = rules::first_repeated_name(
            blk.metrics, [](const MetricDescriptor &d) -> const std::string & { return d.name; });
        if (m < n) {
            metric_loc.index = static_cast<int>(m);
            fail(metric_loc.at("name"), "\"" + blk.metrics[m].name + "\" appears twice");
        }
    }
    blk.metrics_wire = std::make_shared<const std::string>(begin, static_cast<size_t>(c.pos() - begin));
}

// The backend block at the cursor; the cursor ends past it.
void decode_backend(Cursor &c, int index, BackendBlock &blk)
{
    enum { k_name, k_scope, k_metrics, k_values, k_status };
    Loc where;
    where.backend = index;
    const uint32_t entries = as_map(c.next(), where, 8);
    Seen seen;
    blk.status.clear();
    blk.scope = Scope::job;
    for (uint32_t i = 0; i < entries; ++i) {
        auto key = as_str(c.next(), where.at("key"), 32);
        unsigned bit;
        if (is(key, "name")) {
            bit = k_name;
            auto name = as_str(c.next(), where.at("name"), k_max_backend_name_length);
            if (!snake(name))
                fail(where.at("name"), "must be 1 to 64 bytes of [a-z0-9_]");
            blk.name.assign(name);
        } else if (is(key, "scope")) {
            bit = k_scope;
            auto scope = as_str(c.next(), where.at("scope"), 16);
            if (is(scope, "job"))
                blk.scope = Scope::job;
            else if (is(scope, "node"))
                blk.scope = Scope::node;
            else
                fail(where.at("scope"), "must be \"job\" or \"node\", got \"" + std::string(scope) + "\"");
        } else if (is(key, "metrics")) {
            bit = k_metrics;
            decode_metrics(c, where, blk);
        } else if (is(key, "values")) {
            bit = k_values;
            const uint32_t n = as_array(c.next(), where.at("values"), k_max_metrics_per_backend);
            blk.values.resize(n);
            Loc value_loc = where;
            value_loc.list = "values";
            for (uint32_t m = 0; m < n; ++m) {
                value_loc.index = static_cast<int>(m);
                blk.values[m] = as_value(c.next(), value_loc);
            }
        } else if (is(key, "status")) {
            bit = k_status;
            auto status = as_str(c.next(), where.at("status"), k_max_text_length);
            if (!printable_text(status))
                fail(where.at("status"), "contains control characters");
            blk.status.assign(status);
        } else {
            fail(where, "unknown key \"" + std::string(key) + "\"");
        }
        if (!seen.mark(bit))
            fail(where, "key \"" + std::string(key) + "\" appears twice");
    }
    static const char *const required[] = {"name", "scope", "metrics", "values"};
    for (unsigned bit = k_name; bit <= k_values; ++bit)
        if (!seen.has(bit))
            fail(where, std::string("missing required key \"") + required[bit] + "\"");
    if (blk.values.size() != blk.metrics.size())
        fail(where,
             std::to_string(blk.metrics.size()) + " metrics but " + std::to_string(blk.values.size()) + " values");
}

// The meta map at the cursor; the cursor ends past it.
void decode_meta(Cursor &c, Message &out)
{
    const uint32_t entries = as_map(c.next(), Loc{}.at("meta"), k_max_meta_entries);
    out.meta.resize(entries);
    for (uint32_t m = 0; m < entries; ++m) {
        auto mk = as_str(c.next(), Loc{}.at("meta key"), k_max_meta_key_length);
        if (!snake(mk))
            fail("meta", "key \"" + std::string(mk) + "\" must be 1 to 64 bytes of [a-z0-9_]");
        std::string mwhere = "meta." + std::string(mk);
        auto mv = as_str(c.next(), mwhere, k_max_text_length);
        if (!printable_text(mv))
            fail(mwhere, "contains control characters");
        for (uint32_t j = 0; j < m; ++j)
            if (out.meta[j].first == mk)
                fail("meta", "key \"" + std::string(mk) + "\" appears twice");
        out.meta[m].first.assign(mk);
        out.meta[m].second.assign(mv);
    }
}

// The backends array at the cursor; the cursor ends past it.
void decode_backends(Cursor &c, Message &out)
{
    const uint32_t nb = as_array(c.next(), Loc{}.at("backends"), k_max_backends);
    out.backends.resize(nb);
    for (uint32_t b = 0; b < nb; ++b) {
        decode_backend(c, static_cast<int>(b), out.backends[b]);
        for (uint32_t j = 0; j < b; ++j)
            if (out.backends[j].name == out.backends[b].name) {
                Loc where;
                where.backend = static_cast<int>(b);
                fail(where.at("name"), "\"" + out.backends[b].name + "\" appears twice");
            }
    }
}

void decode_top(Cursor &c, Message &out)
{
    enum { k_v, k_kind, k_host, k_job, k_sender, k_seq, k_t, k_backends, k_dropped, k_period, k_ack, k_base, k_meta };
    const Loc top;
    const uint32_t entries = as_map(c.next(), top.at("message"), 16);
    Seen seen;
    out.dropped = 0;
    out.period_s = 0;
    out.ack = 0;
    out.base = 0;
    out.meta.clear();
    for (uint32_t i = 0; i < entries; ++i) {
        auto key = as_str(c.next(), top.at("message key"), 32);
        unsigned bit;
        if (is(key, "v")) {
            bit = k_v;
            uint64_t v = as_uint(c.next(), top.at("v"));
            if (v < k_min_protocol_version || v > k_protocol_version)
                fail(top.at("v"), "unsupported protocol version " + std::to_string(v) + " (this side speaks " +
                                      std::to_string(k_min_protocol_version) + " to " +
                                      std::to_string(k_protocol_version) + ")");
            out.version = static_cast<uint32_t>(v);
        } else if (is(key, "kind")) {
            bit = k_kind;
            auto kind = as_str(c.next(), top.at("kind"), 16);
            if (is(kind, "sample"))
                out.kind = MessageKind::sample;
            else if (is(kind, "job_start"))
                out.kind = MessageKind::job_start;
            else if (is(kind, "job_end"))
                out.kind = MessageKind::job_end;
            else
                fail(top.at("kind"),
                     "must be \"sample\", \"job_start\" or \"job_end\", got \"" + std::string(kind) + "\"");
        } else if (is(key, "host") || is(key, "job")) {
            bool host = is(key, "host");
            bit = host ? k_host : k_job;
            Loc where = top.at(host ? "host" : "job");
            auto id = as_str(c.next(), where, k_max_id_length);
            if (!valid_identifier(id))
                fail(where, "must be 1 to 128 bytes of printable ASCII without '/'");
            (host ? out.host : out.job_id).assign(id);
        } else if (is(key, "sender")) {
            bit = k_sender;
            auto sender = as_str(c.next(), top.at("sender"), k_max_name_length);
            if (sender.empty() || !printable_ascii(sender))
                fail(top.at("sender"), "must be 1 to 128 bytes of printable ASCII");
            out.sender.assign(sender);
        } else if (is(key, "seq")) {
            bit = k_seq;
            out.seq = as_uint(c.next(), top.at("seq"));
        } else if (is(key, "t")) {
            bit = k_t;
            uint64_t t = as_uint(c.next(), top.at("t"));
            if (t > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(top.at("t"), "timestamp out of range");
            out.time_ns = static_cast<int64_t>(t);
        } else if (is(key, "dropped")) {
            bit = k_dropped;
            out.dropped = as_uint(c.next(), top.at("dropped"));
        } else if (is(key, "period")) {
            bit = k_period;
            Item p = c.next();
            if (p.type == Type::nil)
                fail(top.at("period"), "expected a number, got nil");
            double period = as_value(p, top.at("period"));
            if (!std::isfinite(period) || period < 0)
                fail(top.at("period"), "must be a finite number >= 0");
            out.period_s = period;
        } else if (is(key, "ack")) {
            bit = k_ack;
            out.ack = as_uint(c.next(), top.at("ack"));
        } else if (is(key, "base")) {
            bit = k_base;
            out.base = as_uint(c.next(), top.at("base"));
        } else if (is(key, "meta")) {
            bit = k_meta;
            decode_meta(c, out);
        } else if (is(key, "backends")) {
            bit = k_backends;
            decode_backends(c, out);
        } else {
            fail(top.at("message"), "unknown key \"" + std::string(key) + "\"");
        }
        if (!seen.mark(bit))
            fail(top.at("message"), "key \"" + std::string(key) + "\" appears twice");
    }
    static const char *const required[] = {"v", "kind", "host", "job", "sender", "seq", "t", "backends"};
    for (unsigned bit = k_v; bit <= k_backends; ++bit)
        if (!seen.has(bit))
            fail(top.at("message"), std::string("missing required key \"") + required[bit] + "\"");
    if (seen.has(k_base) && out.version < k_acked_protocol_version)
        fail(top.at("base"), "needs protocol version " + std::to_string(k_acked_protocol_version));
    if (out.base > out.seq)
        fail(top.at("base"), "must not exceed seq (" + std::to_string(out.seq) + ")");
}

}  // namespace

Result<void> decode(const char *data, size_t size, Message &out)
{
    if (size == 0)
        return Error::parse("empty message");
    if (size > k_max_message_bytes)
        return Error::parse("message of " + std::to_string(size) + " bytes exceeds the limit of " +
                            std::to_string(k_max_message_bytes));
    try {
        Cursor c(data, data + size);
        decode_top(c, out);
        if (c.left() > 0)
            throw Fail{std::to_string(c.left()) + " trailing bytes after the message"};
        return ok();
    } catch (const mp::FrameError &f) {
        out.backends.clear();
        return Error::parse(f.message);
    } catch (const Fail &f) {
        out.backends.clear();  // never let a half-checked slot count as checked
        return Error::parse(f.message);
    } catch (const std::bad_alloc &) {
        out.backends.clear();
        return Error(Errc::internal, "out of memory while decoding");
    }
}

}  // namespace colmet::wire
