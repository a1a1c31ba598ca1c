#include "node/control/ControlProtocol.hpp"

#include "common/names.hpp"
#include "node/NodeOptions.hpp"
#include "node/backends/perfhw/PerfEventSpec.hpp"
#include "wire/msgpack_pack.hpp"
#include "wire/rules.hpp"

#include <msgpack.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>

namespace colmet::node::control {
namespace {

using msgpack::object;
namespace type = msgpack::type;

namespace pack = wire::pack;
using pack::Packer;
using pack::StringWriter;

// A parsed body: limits keep a hostile frame from allocating much.
Result<msgpack::object_handle> unpack_map(std::string_view body)
{
    if (body.empty())
        return Error::parse("empty body");
    if (body.size() > k_max_frame_bytes)
        return Error::parse("body of " + std::to_string(body.size()) + " bytes exceeds " +
                            std::to_string(k_max_frame_bytes));
    try {
        // array, map, str, bin, ext, depth
        msgpack::unpack_limit limit(256, 32, 4096, 0, 0, 4);
        std::size_t offset = 0;
        auto handle = msgpack::unpack(body.data(), body.size(), offset, nullptr, nullptr, limit);
        if (offset != body.size())
            return Error::parse(std::to_string(body.size() - offset) + " trailing bytes after the msgpack map");
        if (handle.get().type != type::MAP)
            return Error::parse("expected a msgpack map");
        return handle;
    } catch (const msgpack::insufficient_bytes &) {
        return Error::parse("truncated msgpack");
    } catch (const msgpack::size_overflow &e) {
        return Error::parse(std::string("a declared size exceeds the limits (") + e.what() + ")");
    } catch (const std::exception &e) {
        return Error::parse(std::string("not valid msgpack (") + e.what() + ")");
    }
}

std::optional<std::string_view> as_str(const object &o)
{
    if (o.type != type::STR)
        return std::nullopt;
    return std::string_view(o.via.str.ptr, o.via.str.size);
}

std::optional<double> as_number(const object &o)
{
    switch (o.type) {
    case type::POSITIVE_INTEGER: return static_cast<double>(o.via.u64);
    case type::NEGATIVE_INTEGER: return static_cast<double>(o.via.i64);
    case type::FLOAT32:
    case type::FLOAT64: return o.via.f64;
    default: return std::nullopt;
    }
}

std::optional<uint64_t> as_uint(const object &o)
{
    if (o.type != type::POSITIVE_INTEGER)
        return std::nullopt;
    return o.via.u64;
}

Result<std::vector<std::string>> str_array(const object &o, const std::string &field, size_t max_items)
{
    if (o.type != type::ARRAY)
        return Error::invalid(field + ": expected an array of strings");
    if (o.via.array.size > max_items)
        return Error::invalid(field + ": more than " + std::to_string(max_items) + " items");
    std::vector<std::string> out;
    for (uint32_t i = 0; i < o.via.array.size; ++i) {
        auto s = as_str(o.via.array.ptr[i]);
        if (!s)
            return Error::invalid(field + "[" + std::to_string(i) + "]: expected a string");
        out.emplace_back(*s);
    }
    return out;
}

Result<double> check_period(double p, const std::string &field)
{
    if (!std::isfinite(p) || p < k_min_period_s || p > k_max_period_s) {
        char shown[64];
        std::snprintf(shown, sizeof shown, "%g s", p);
        return Error::invalid(field + ": " + shown + " is outside 0.1 .. 3600 s");
    }
    return p;
}

// Split like --perfhw-list and check each name's characters.
Result<std::vector<std::string>> check_events(const std::vector<std::string> &items, const std::string &field)
{
    for (const auto &item : items)
        if (!wire::rules::printable_ascii(item))
            return Error::invalid(field + ": event names are printable ASCII");
    auto names = backends::perfhw::split_event_list(items);
    if (!names)
        return Error::invalid(field + ": " + names.error().message());
    if (names->empty())
        return Error::invalid(field + ": no event given");
    if (names->size() > backends::perfhw::k_max_events)
        return Error::invalid(field + ": more than " + std::to_string(backends::perfhw::k_max_events) + " events");
    return names;
}

struct KeySeen {
    std::vector<std::string_view> keys;
    bool add(std::string_view k)
    {
        for (auto s : keys)
            if (s == k)
                return false;
        keys.push_back(k);
        return true;
    }
};

// How the keys of a map are checked: which kind of error, the text for a key
// that is not a string, and, when repeats are refused, what precedes
// "key \"k\" given twice".
struct KeyRules {
    Error (*error)(std::string);
    const char *not_a_string;
    const char *twice_prefix = nullptr;  // nullptr: a repeated key is not checked
};

// Calls fn(key, value) for each entry of the map m, in order, and stops at
// the first error, its own or fn's.
template <typename Fn>
Result<void> for_each_entry(const object &m, const KeyRules &rules, Fn &&fn)
{
    KeySeen seen;
    for (uint32_t i = 0; i < m.via.map.size; ++i) {
        auto key = as_str(m.via.map.ptr[i].key);
        if (!key)
            return rules.error(rules.not_a_string);
        if (rules.twice_prefix && !seen.add(*key))
            return rules.error(std::string(rules.twice_prefix) + "key \"" + std::string(*key) + "\" given twice");
        if (auto r = fn(*key, m.via.map.ptr[i].val); !r)
            return r;
    }
    return ok();
}

// An unknown key as shown in an error: at most 64 characters, printable.
std::string shown_key(std::string_view key)
{
    std::string shown(key.substr(0, 64));
    if (!wire::rules::printable_ascii(shown))
        shown = "(not printable)";
    return shown;
}

Result<ControlState> decode_state(const object &o)
{
    if (o.type != type::MAP)
        return Error::parse("state: expected a map");
    ControlState st;
    // Unknown keys are ignored: a newer sampler may say more.
    const KeyRules rules{Error::parse, "state: keys are strings"};
    auto walked = for_each_entry(o, rules, [&](std::string_view key, const object &v) -> Result<void> {
        if (key == "job") {
            if (auto s = as_str(v))
                st.job_id = *s;
        } else if (key == "sample_period") {
            if (auto p = as_number(v))
                st.period_s = *p;
        } else if (key == "perfhw") {
            if (auto s = as_str(v))
                st.perfhw = *s;
        } else if (key == "perfhw_events") {
            auto names = str_array(v, "state.perfhw_events", 256);
            if (!names)
                return Error::parse(names.error().message());
            st.perfhw_events = std::move(*names);
        } else if (key == "samples_sent") {
            if (auto n = as_uint(v))
                st.samples_sent = *n;
        } else if (key == "dropped") {
            if (auto n = as_uint(v))
                st.dropped = *n;
        } else if (key == "collector") {
            if (auto s = as_str(v))
                st.collector = *s;
        }
        return ok();
    });
    if (!walked)
        return walked.error();
    return st;
}

} // namespace

const char *to_string(Rejection r)
{
    switch (r) {
    case Rejection::invalid: return "invalid";
    case Rejection::unsupported: return "unsupported";
    case Rejection::failed: return "failed";
    case Rejection::permission: return "permission";
    case Rejection::busy: return "busy";
    case Rejection::timeout: return "timeout";
    }
    return "invalid";
}

ControlAnswer ControlAnswer::reject(Rejection code, std::string reason)
{
    ControlAnswer a;
    a.accepted = false;
    a.code = code;
    if (reason.size() > k_max_reason_length)
        reason.resize(k_max_reason_length);
    a.reason = std::move(reason);
    return a;
}

std::string encode_request(const ControlRequest &r)
{
    std::string out;
    StringWriter w{out};
    Packer pk(w);
    uint32_t n = 1 + (r.job_id ? 1 : 0) + (r.period_s ? 1 : 0) + (r.perfhw_events ? 1 : 0) + (r.perfhw != PerfhwAction::none ? 1 : 0);
    pk.pack_map(n);
    pack::str(pk, "v");
    pk.pack_uint32(k_control_version);
    if (r.job_id) {
        pack::str(pk, "job");
        pack::str(pk, *r.job_id);
    }
    if (r.period_s) {
        pack::str(pk, "sample_period");
        pk.pack_double(*r.period_s);
    }
    if (r.perfhw_events) {
        pack::str(pk, "perfhw_events");
        pack::str_array(pk, *r.perfhw_events);
    }
    if (r.perfhw != PerfhwAction::none) {
        pack::str(pk, "perfhw");
        pack::str(pk, r.perfhw == PerfhwAction::pause ? "pause" : "resume");
    }
    return out;
}

Result<ControlRequest> decode_request(std::string_view body)
{
    auto handle = unpack_map(body);
    if (!handle)
        return handle.error();
    ControlRequest r;
    bool have_version = false;
    const KeyRules rules{Error::invalid, "request keys must be strings", ""};
    auto walked = for_each_entry(handle->get(), rules, [&](std::string_view key, const object &v) -> Result<void> {
        if (key == "v") {
            auto version = as_uint(v);
            if (!version || *version != k_control_version)
                return Error::invalid("v: this sampler speaks control protocol version 1");
            have_version = true;
        } else if (key == "job") {
            auto job = as_str(v);
            if (!job || job->empty() || job->size() > k_max_id_length || !wire::rules::printable_ascii(*job))
                return Error::invalid("job: expected a job id (1 to 128 printable ASCII characters)");
            r.job_id = std::string(*job);
        } else if (key == "sample_period") {
            auto p = as_number(v);
            if (!p)
                return Error::invalid("sample_period: expected a number of seconds");
            auto checked = check_period(*p, "sample_period");
            if (!checked)
                return checked.error();
            r.period_s = *checked;
        } else if (key == "perfhw_events") {
            auto items = str_array(v, "perfhw_events", backends::perfhw::k_max_events);
            if (!items)
                return items.error();
            auto names = check_events(*items, "perfhw_events");
            if (!names)
                return names.error();
            r.perfhw_events = std::move(*names);
        } else if (key == "perfhw") {
            auto s = as_str(v);
            if (s && *s == "pause")
                r.perfhw = PerfhwAction::pause;
            else if (s && *s == "resume")
                r.perfhw = PerfhwAction::resume;
            else
                return Error::invalid("perfhw: expected \"pause\" or \"resume\"");
        } else {
            return Error::invalid("unknown key \"" + shown_key(key) + "\"");
        }
        return ok();
    });
    if (!walked)
        return walked.error();
    if (!have_version)
        return Error::invalid("v: missing protocol version");
    return r;
}

std::string encode_answer(const ControlAnswer &a)
{
    std::string out;
    StringWriter w{out};
    Packer pk(w);
    pk.pack_map(3 + (a.state ? 1 : 0) + (a.accepted ? 0 : 1));
    pack::str(pk, "v");
    pk.pack_uint32(k_control_version);
    pack::str(pk, "accepted");
    if (a.accepted)
        pk.pack_true();
    else
        pk.pack_false();
    if (a.accepted) {
        pack::str(pk, "changed");
        pack::str_array(pk, a.changed);
    } else {
        pack::str(pk, "code");
        pack::str(pk, to_string(a.code));
        pack::str(pk, "reason");
        pack::str(pk, std::string_view(a.reason).substr(0, k_max_reason_length));
    }
    if (a.state) {
        const ControlState &s = *a.state;
        pack::str(pk, "state");
        pk.pack_map(7);
        pack::str(pk, "job");
        pack::str(pk, s.job_id);
        pack::str(pk, "sample_period");
        pk.pack_double(s.period_s);
        pack::str(pk, "perfhw");
        pack::str(pk, s.perfhw);
        pack::str(pk, "perfhw_events");
        pack::str_array(pk, s.perfhw_events);
        pack::str(pk, "samples_sent");
        pk.pack_uint64(s.samples_sent);
        pack::str(pk, "dropped");
        pk.pack_uint64(s.dropped);
        pack::str(pk, "collector");
        pack::str(pk, s.collector);
    }
    return out;
}

Result<ControlAnswer> decode_answer(std::string_view body)
{
    auto handle = unpack_map(body);
    if (!handle)
        return handle.error();
    ControlAnswer a;
    bool have_accepted = false;
    const KeyRules rules{Error::parse, "answer keys must be strings"};
    auto walked = for_each_entry(handle->get(), rules, [&](std::string_view key, const object &v) -> Result<void> {
        if (key == "accepted") {
            if (v.type != type::BOOLEAN)
                return Error::parse("accepted: expected a boolean");
            a.accepted = v.via.boolean;
            have_accepted = true;
        } else if (key == "code") {
            auto s = as_str(v);
            for (Rejection r : {Rejection::invalid, Rejection::unsupported, Rejection::failed, Rejection::permission,
                                Rejection::busy, Rejection::timeout})
                if (s && *s == to_string(r))
                    a.code = r;
        } else if (key == "reason") {
            if (auto s = as_str(v))
                a.reason = *s;
        } else if (key == "changed") {
            auto items = str_array(v, "changed", 16);
            if (!items)
                return Error::parse(items.error().message());
            a.changed = std::move(*items);
        } else if (key == "state") {
            auto st = decode_state(v);
            if (!st)
                return st.error();
            a.state = std::move(*st);
        }
        return ok();
    });
    if (!walked)
        return walked.error();
    if (!have_accepted)
        return Error::parse("answer without \"accepted\"");
    return a;
}

Result<ControlRequest> decode_legacy_configure(std::string_view body)
{
    auto handle = unpack_map(body);
    if (!handle)
        return handle.error();
    ControlRequest r;
    const KeyRules rules{Error::invalid, "configure message: keys must be strings", "configure message: "};
    auto walked = for_each_entry(handle->get(), rules, [&](std::string_view key, const object &v) -> Result<void> {
        auto value = as_str(v);
        if (!value)
            return Error::invalid("configure message: the value of \"" + std::string(key.substr(0, 64)) +
                                  "\" must be a string");
        if (key == "sample_period") {
            std::string text(*value);
            double p = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), p);
            if (ec != std::errc() || end != text.data() + text.size() || text.empty())
                return Error::invalid("sample_period: \"" + text.substr(0, 64) + "\" is not a number of seconds");
            auto checked = check_period(p, "sample_period");
            if (!checked)
                return checked.error();
            r.period_s = *checked;
        } else if (key == "perfhw_metrics") {
            auto names = check_events({std::string(*value)}, "perfhw_metrics");
            if (!names)
                return names.error();
            r.perfhw_events = std::move(*names);
        } else {
            return Error::invalid("configure message: unknown key \"" + shown_key(key) + "\"");
        }
        return ok();
    });
    if (!walked)
        return walked.error();
    if (!r.period_s && !r.perfhw_events)
        return Error::invalid("configure message: neither \"sample_period\" nor \"perfhw_metrics\"");
    return r;
}

std::string frame(std::string_view body)
{
    auto n = static_cast<uint32_t>(body.size());
    std::string out;
    out.reserve(k_frame_header_bytes + body.size());
    out.push_back(static_cast<char>((n >> 24) & 0xff));
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
    out.append(body);
    return out;
}

size_t FrameReader::wanted() const
{
    if (m_status != Status::incomplete)
        return 0;
    if (m_buf.size() < k_frame_header_bytes)
        return k_frame_header_bytes - m_buf.size();
    return k_frame_header_bytes + m_declared - m_buf.size();
}

FrameReader::Status FrameReader::feed(std::string_view bytes)
{
    while (!bytes.empty() && m_status == Status::incomplete) {
        size_t take = std::min(wanted(), bytes.size());
        m_buf.append(bytes.substr(0, take));
        bytes.remove_prefix(take);
        if (m_buf.size() == k_frame_header_bytes) {
            const auto *p = reinterpret_cast<const unsigned char *>(m_buf.data());
            m_declared = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
            if (m_declared == 0 || m_declared > k_max_frame_bytes) {
                m_status = Status::bad_length;
                break;
            }
            m_buf.reserve(k_frame_header_bytes + m_declared);
        }
        if (m_buf.size() > k_frame_header_bytes && m_buf.size() == k_frame_header_bytes + m_declared)
            m_status = Status::complete;
    }
    return m_status;
}

std::string_view FrameReader::body() const
{
    if (m_status != Status::complete)
        return {};
    return std::string_view(m_buf).substr(k_frame_header_bytes);
}

std::filesystem::path control_socket_path(const std::filesystem::path &dir, std::string_view job_id)
{
    return dir / (sanitize_name(job_id) + ".ctl");
}

} // namespace colmet::node::control
