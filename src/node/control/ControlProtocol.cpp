#include "node/control/ControlProtocol.hpp"

#include "common/names.hpp"
#include "node/control/ControlDecoding.hpp"
#include "scheduler/JobContext.hpp"
#include "spec/event_list.hpp"
#include "wire/msgpack_pack.hpp"
#include "wire/rules.hpp"

#include <msgpack.hpp>

#include <charconv>

namespace colmet::node::control {
using namespace detail;

namespace {

namespace type = msgpack::type;

namespace pack = wire::pack;
using pack::Packer;
using pack::StringWriter;

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
        } else if (key == "delivery") {
            if (auto s = as_str(v))
                st.delivery = *s;
        } else if (key == "acknowledged") {
            if (auto n = as_uint(v))
                st.acknowledged = *n;
        } else if (key == "unacknowledged") {
            if (auto n = as_uint(v))
                st.unacknowledged = *n;
        } else if (key == "spooled") {
            if (auto n = as_uint(v))
                st.spooled = *n;
        }
        return ok();
    });
    if (!walked)
        return walked.error();
    return st;
}

}  // namespace

const char *to_string(Rejection r)
{
    switch (r) {
    case Rejection::invalid:
        return "invalid";
    case Rejection::unsupported:
        return "unsupported";
    case Rejection::failed:
        return "failed";
    case Rejection::permission:
        return "permission";
    case Rejection::busy:
        return "busy";
    case Rejection::timeout:
        return "timeout";
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

namespace {

// "context": a map of the job's context, KEY -> VALUE, each item as
// colmet-job start --context takes it.
Result<std::vector<std::pair<std::string, std::string>>> decode_context(const object &v)
{
    if (v.type != type::MAP || v.via.map.size == 0 || v.via.map.size > sched::context_keys().size())
        return Error::invalid("context: expected a map of 1 to " + std::to_string(sched::context_keys().size()) +
                              " KEY: VALUE strings");
    std::vector<std::pair<std::string, std::string>> out;
    const KeyRules rules{Error::invalid, "context: keys must be strings", "context: "};
    auto walked = for_each_entry(v, rules, [&](std::string_view key, const object &value) -> Result<void> {
        auto text = as_str(value);
        if (!text)
            return Error::invalid("context " + shown_key(key) + ": expected a string");
        auto item = sched::parse_context_item(std::string(key) + "=" + std::string(*text));
        if (!item)
            return item.error();
        out.push_back(std::move(*item));
        return ok();
    });
    if (!walked)
        return walked.error();
    return out;
}

}  // namespace

std::string encode_request(const ControlRequest &r)
{
    std::string out;
    StringWriter w{out};
    Packer pk(w);
    uint32_t n = 1 + (r.job_id ? 1 : 0) + (r.period_s ? 1 : 0) + (r.perfhw_events ? 1 : 0) +
                 (r.perfhw != PerfhwAction::none ? 1 : 0) + (r.sample_now ? 1 : 0) + (r.context.empty() ? 0 : 1);
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
    if (r.sample_now) {
        pack::str(pk, "sample_now");
        pk.pack_true();
    }
    if (!r.context.empty()) {
        pack::str(pk, "context");
        pk.pack_map(static_cast<uint32_t>(r.context.size()));
        for (const auto &[key, value] : r.context) {
            pack::str(pk, key);
            pack::str(pk, value);
        }
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
            auto items = str_array(v, "perfhw_events", spec::k_max_events);
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
        } else if (key == "sample_now") {
            if (v.type != type::BOOLEAN)
                return Error::invalid("sample_now: expected true or false");
            r.sample_now = v.via.boolean;
        } else if (key == "context") {
            auto context = decode_context(v);
            if (!context)
                return context.error();
            r.context = std::move(*context);
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
        pk.pack_map(11);
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
        pack::str(pk, "delivery");
        pack::str(pk, s.delivery);
        pack::str(pk, "acknowledged");
        pk.pack_uint64(s.acknowledged);
        pack::str(pk, "unacknowledged");
        pk.pack_uint64(s.unacknowledged);
        pack::str(pk, "spooled");
        pk.pack_uint64(s.spooled);
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
    return job_file(dir, job_id, JobFile::control_socket);
}

}  // namespace colmet::node::control
