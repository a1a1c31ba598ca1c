// Strict decoder: every field is type- and bound-checked, and every failure
// names the offending field. The msgpack parser runs with limits, so a
// declared length can never make it allocate more than the frame justifies.
// The location of a field is only turned into text when decoding fails, so
// the success path does no string formatting.
#include "wire/codec.hpp"

#include "common/names.hpp"
#include "wire/rules.hpp"

#include <msgpack.hpp>

#include <cmath>
#include <limits>
#include <string_view>

namespace colmet::wire {
namespace {

using msgpack::object;
using rules::printable_ascii;
using rules::printable_text;
namespace type = msgpack::type;

bool snake(std::string_view s) { return rules::snake_name(s, 64); }

// Where a field is: "kind", "backends[1].name", "backends[1].metrics[3].unit".
struct Loc {
    const char *field = nullptr;  // last component (may be null)
    int backend = -1;
    const char *list = nullptr;   // "metrics" or "values"
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

const char *type_name(const object &o)
{
    switch (o.type) {
    case type::NIL: return "nil";
    case type::BOOLEAN: return "boolean";
    case type::POSITIVE_INTEGER:
    case type::NEGATIVE_INTEGER: return "integer";
    case type::FLOAT32:
    case type::FLOAT64: return "float";
    case type::STR: return "string";
    case type::BIN: return "binary";
    case type::ARRAY: return "array";
    case type::MAP: return "map";
    case type::EXT: return "extension";
    }
    return "unknown";
}

template <typename Where>
std::string_view as_str(const object &o, const Where &where, size_t max_len)
{
    if (o.type != type::STR)
        fail(where, std::string("expected a string, got ") + type_name(o));
    if (o.via.str.size > max_len)
        fail(where, "string of " + std::to_string(o.via.str.size) + " bytes exceeds the limit of " +
                        std::to_string(max_len));
    return {o.via.str.ptr, o.via.str.size};
}

uint64_t as_uint(const object &o, const Loc &where)
{
    if (o.type != type::POSITIVE_INTEGER)
        fail(where, std::string("expected an unsigned integer, got ") + type_name(o));
    return o.via.u64;
}

template <typename Where>
const object &as_array(const object &o, const Where &where, size_t max_len)
{
    if (o.type != type::ARRAY)
        fail(where, std::string("expected an array, got ") + type_name(o));
    if (o.via.array.size > max_len)
        fail(where, "array of " + std::to_string(o.via.array.size) + " elements exceeds the limit of " +
                        std::to_string(max_len));
    return o;
}

template <typename Where>
const object &as_map(const object &o, const Where &where, size_t max_len)
{
    if (o.type != type::MAP)
        fail(where, std::string("expected a map, got ") + type_name(o));
    if (o.via.map.size > max_len)
        fail(where, "map of " + std::to_string(o.via.map.size) + " entries exceeds the limit of " +
                        std::to_string(max_len));
    return o;
}

double as_value(const object &o, const Loc &where)
{
    switch (o.type) {
    case type::NIL: return std::numeric_limits<double>::quiet_NaN();
    case type::POSITIVE_INTEGER: return static_cast<double>(o.via.u64);
    case type::NEGATIVE_INTEGER: return static_cast<double>(o.via.i64);
    case type::FLOAT32:
    case type::FLOAT64:
        if (std::isinf(o.via.f64))
            fail(where, "value is not finite");
        return o.via.f64;  // NaN is accepted and means missing, like nil
    default: fail(where, std::string("expected a number or nil, got ") + type_name(o));
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
bool decode_metric(const object &o, const Loc &where, MetricDescriptor &d)
{
    const object &arr = as_array(o, where, 3);
    if (arr.via.array.size != 3)
        fail(where, "expected [name, unit, kind], got an array of " + std::to_string(arr.via.array.size));
    const object *e = arr.via.array.ptr;
    auto name = as_str(e[0], where.at("name"), k_max_name_length);
    if (name.empty() || !printable_ascii(name))
        fail(where.at("name"), "must be 1 to 128 bytes of printable ASCII");
    auto unit = as_str(e[1], where.at("unit"), k_max_unit_length);
    if (unit.empty() || !printable_ascii(unit))
        fail(where.at("unit"), "must be 1 to 16 bytes of printable ASCII");
    auto kind = as_str(e[2], where.at("kind"), 16);
    if (kind == "counter")
        d.kind = MetricKind::counter;
    else if (kind == "gauge")
        d.kind = MetricKind::gauge;
    else
        fail(where.at("kind"), "must be \"counter\" or \"gauge\", got \"" + std::string(kind) + "\"");
    bool same = d.name == name;
    if (!same)
        d.name.assign(name);
    d.unit.assign(unit);
    return same;
}

void decode_backend(const object &o, int index, BackendBlock &blk)
{
    enum { k_name, k_scope, k_metrics, k_values, k_status };
    Loc where;
    where.backend = index;
    const object &map = as_map(o, where, 8);
    Seen seen;
    const object *metrics = nullptr;
    const object *values = nullptr;
    blk.status.clear();
    blk.scope = Scope::job;
    for (uint32_t i = 0; i < map.via.map.size; ++i) {
        const auto &kv = map.via.map.ptr[i];
        auto key = as_str(kv.key, where.at("key"), 32);
        unsigned bit;
        if (key == "name") {
            bit = k_name;
            auto name = as_str(kv.val, where.at("name"), k_max_backend_name_length);
            if (!snake(name))
                fail(where.at("name"), "must be 1 to 64 bytes of [a-z0-9_]");
            blk.name.assign(name);
        } else if (key == "scope") {
            bit = k_scope;
            auto scope = as_str(kv.val, where.at("scope"), 16);
            if (scope == "job")
                blk.scope = Scope::job;
            else if (scope == "node")
                blk.scope = Scope::node;
            else
                fail(where.at("scope"), "must be \"job\" or \"node\", got \"" + std::string(scope) + "\"");
        } else if (key == "metrics") {
            bit = k_metrics;
            metrics = &as_array(kv.val, where.at("metrics"), k_max_metrics_per_backend);
        } else if (key == "values") {
            bit = k_values;
            values = &as_array(kv.val, where.at("values"), k_max_metrics_per_backend);
        } else if (key == "status") {
            bit = k_status;
            auto status = as_str(kv.val, where.at("status"), k_max_text_length);
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
    uint32_t n = metrics->via.array.size;
    if (values->via.array.size != n)
        fail(where, std::to_string(n) + " metrics but " + std::to_string(values->via.array.size) + " values");
    // Messages mostly repeat the metric names of the previous one in the
    // same slot (decode() clears every slot after a failure, so what is
    // there passed the checks): the quadratic uniqueness check runs only
    // when the names changed.
    bool same_names = blk.metrics.size() == n;
    blk.metrics.resize(n);
    blk.values.resize(n);
    Loc metric_loc = where, value_loc = where;
    metric_loc.list = "metrics";
    value_loc.list = "values";
    for (uint32_t m = 0; m < n; ++m) {
        metric_loc.index = value_loc.index = static_cast<int>(m);
        same_names = decode_metric(metrics->via.array.ptr[m], metric_loc, blk.metrics[m]) && same_names;
        blk.values[m] = as_value(values->via.array.ptr[m], value_loc);
    }
    if (same_names)
        return;
    for (uint32_t m = 1; m < n; ++m)
        for (uint32_t j = 0; j < m; ++j)
            if (blk.metrics[j].name == blk.metrics[m].name) {
                metric_loc.index = static_cast<int>(m);
                fail(metric_loc.at("name"), "\"" + blk.metrics[m].name + "\" appears twice");
            }
}

void decode_meta(const object &o, Message &out)
{
    const object &meta = as_map(o, Loc{}.at("meta"), k_max_meta_entries);
    out.meta.resize(meta.via.map.size);
    for (uint32_t m = 0; m < meta.via.map.size; ++m) {
        auto mk = as_str(meta.via.map.ptr[m].key, Loc{}.at("meta key"), k_max_meta_key_length);
        if (!snake(mk))
            fail("meta", "key \"" + std::string(mk) + "\" must be 1 to 64 bytes of [a-z0-9_]");
        std::string mwhere = "meta." + std::string(mk);
        auto mv = as_str(meta.via.map.ptr[m].val, mwhere, k_max_text_length);
        if (!printable_text(mv))
            fail(mwhere, "contains control characters");
        for (uint32_t j = 0; j < m; ++j)
            if (out.meta[j].first == mk)
                fail("meta", "key \"" + std::string(mk) + "\" appears twice");
        out.meta[m].first.assign(mk);
        out.meta[m].second.assign(mv);
    }
}

void decode_top(const object &root, Message &out)
{
    enum { k_v, k_kind, k_host, k_job, k_sender, k_seq, k_t, k_backends, k_dropped, k_period, k_ack, k_meta };
    const Loc top;
    const object &map = as_map(root, top.at("message"), 16);
    Seen seen;
    out.dropped = 0;
    out.period_s = 0;
    out.ack = 0;
    out.meta.clear();
    const object *backends = nullptr;
    for (uint32_t i = 0; i < map.via.map.size; ++i) {
        const auto &kv = map.via.map.ptr[i];
        auto key = as_str(kv.key, top.at("message key"), 32);
        unsigned bit;
        if (key == "v") {
            bit = k_v;
            uint64_t v = as_uint(kv.val, top.at("v"));
            if (v != k_protocol_version)
                fail(top.at("v"), "unsupported protocol version " + std::to_string(v) + " (this side speaks " +
                                      std::to_string(k_protocol_version) + ")");
            out.version = static_cast<uint32_t>(v);
        } else if (key == "kind") {
            bit = k_kind;
            auto kind = as_str(kv.val, top.at("kind"), 16);
            if (kind == "sample")
                out.kind = MessageKind::sample;
            else if (kind == "job_start")
                out.kind = MessageKind::job_start;
            else if (kind == "job_end")
                out.kind = MessageKind::job_end;
            else
                fail(top.at("kind"),
                     "must be \"sample\", \"job_start\" or \"job_end\", got \"" + std::string(kind) + "\"");
        } else if (key == "host" || key == "job") {
            bool host = key == "host";
            bit = host ? k_host : k_job;
            Loc where = top.at(host ? "host" : "job");
            auto id = as_str(kv.val, where, k_max_id_length);
            if (!valid_identifier(id))
                fail(where, "must be 1 to 128 bytes of printable ASCII without '/'");
            (host ? out.host : out.job_id).assign(id);
        } else if (key == "sender") {
            bit = k_sender;
            auto sender = as_str(kv.val, top.at("sender"), k_max_name_length);
            if (sender.empty() || !printable_ascii(sender))
                fail(top.at("sender"), "must be 1 to 128 bytes of printable ASCII");
            out.sender.assign(sender);
        } else if (key == "seq") {
            bit = k_seq;
            out.seq = as_uint(kv.val, top.at("seq"));
        } else if (key == "t") {
            bit = k_t;
            uint64_t t = as_uint(kv.val, top.at("t"));
            if (t > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(top.at("t"), "timestamp out of range");
            out.time_ns = static_cast<int64_t>(t);
        } else if (key == "dropped") {
            bit = k_dropped;
            out.dropped = as_uint(kv.val, top.at("dropped"));
        } else if (key == "period") {
            bit = k_period;
            if (kv.val.type == type::NIL)
                fail(top.at("period"), "expected a number, got nil");
            double p = as_value(kv.val, top.at("period"));
            if (!std::isfinite(p) || p < 0)
                fail(top.at("period"), "must be a finite number >= 0");
            out.period_s = p;
        } else if (key == "ack") {
            bit = k_ack;
            out.ack = as_uint(kv.val, top.at("ack"));
        } else if (key == "meta") {
            bit = k_meta;
            decode_meta(kv.val, out);
        } else if (key == "backends") {
            bit = k_backends;
            backends = &as_array(kv.val, top.at("backends"), k_max_backends);
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

    uint32_t nb = backends->via.array.size;
    out.backends.resize(nb);
    for (uint32_t b = 0; b < nb; ++b) {
        decode_backend(backends->via.array.ptr[b], static_cast<int>(b), out.backends[b]);
        for (uint32_t j = 0; j < b; ++j)
            if (out.backends[j].name == out.backends[b].name) {
                Loc where;
                where.backend = static_cast<int>(b);
                fail(where.at("name"), "\"" + out.backends[b].name + "\" appears twice");
            }
    }
}

// Strings stay in the caller's buffer while the object tree is walked.
bool reference_everything(msgpack::type::object_type, std::size_t, void *) { return true; }

} // namespace

Result<void> decode(const char *data, size_t size, Message &out)
{
    if (size == 0)
        return Error::parse("empty message");
    if (size > k_max_message_bytes)
        return Error::parse("message of " + std::to_string(size) + " bytes exceeds the limit of " +
                            std::to_string(k_max_message_bytes));
    try {
        // array, map, str, bin, ext, depth
        msgpack::unpack_limit limit(k_max_metrics_per_backend, k_max_meta_entries, k_max_text_length, 0, 0, 6);
        std::size_t offset = 0;
        msgpack::object_handle handle = msgpack::unpack(data, size, offset, reference_everything, nullptr, limit);
        if (offset != size)
            return Error::parse(std::to_string(size - offset) + " trailing bytes after the message");
        decode_top(handle.get(), out);
        return ok();
    } catch (const Fail &f) {
        out.backends.clear();  // never let a half-checked slot count as checked
        return Error::parse(f.message);
    } catch (const msgpack::insufficient_bytes &) {
        return Error::parse("truncated message");
    } catch (const msgpack::size_overflow &e) {
        return Error::parse(std::string("a declared size exceeds the protocol limits (") + e.what() + ")");
    } catch (const msgpack::parse_error &e) {
        return Error::parse(std::string("not valid msgpack (") + e.what() + ")");
    } catch (const std::bad_alloc &) {
        out.backends.clear();
        return Error(Errc::internal, "out of memory while decoding");
    } catch (const std::exception &e) {
        out.backends.clear();
        return Error::parse(std::string("cannot decode: ") + e.what());
    }
}

} // namespace colmet::wire
