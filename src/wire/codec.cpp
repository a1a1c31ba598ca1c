#include "wire/codec.hpp"

#include "common/names.hpp"
#include "wire/msgpack_pack.hpp"
#include "wire/rules.hpp"

#include <msgpack.hpp>

#include <cmath>
#include <limits>
#include <string_view>

namespace colmet::wire {

const char *to_string(MessageKind kind)
{
    switch (kind) {
    case MessageKind::sample:
        return "sample";
    case MessageKind::job_start:
        return "job_start";
    case MessageKind::job_end:
        return "job_end";
    }
    return "?";
}

const char *to_string(MetricKind kind) { return kind == MetricKind::counter ? "counter" : "gauge"; }
const char *to_string(Scope scope) { return scope == Scope::job ? "job" : "node"; }

namespace {

using rules::printable_ascii;
using rules::printable_text;
using rules::snake_name;

// ---------------------------------------------------------------- rules shared by encoder and decoder

std::string check_metric_name(std::string_view s)
{
    if (s.empty() || s.size() > k_max_name_length)
        return "must be 1 to " + std::to_string(k_max_name_length) + " bytes";
    if (!printable_ascii(s))
        return "must be printable ASCII";
    return {};
}

std::string check_unit(std::string_view s)
{
    if (s.empty() || s.size() > k_max_unit_length)
        return "must be 1 to " + std::to_string(k_max_unit_length) + " bytes";
    if (!printable_ascii(s))
        return "must be printable ASCII";
    return {};
}

// ---------------------------------------------------------------- encoder

using pack::Packer;
using pack::StringWriter;

void pack_value(Packer &pk, double v)
{
    if (std::isnan(v)) {
        pk.pack_nil();
        return;
    }
    // Whole numbers (counts, bytes) go out as integers: shorter and exact.
    constexpr double k_exact = 9007199254740992.0;  // 2^53
    if (v == std::trunc(v) && std::fabs(v) <= k_exact) {
        if (v >= 0)
            pk.pack_uint64(static_cast<uint64_t>(v));
        else
            pk.pack_int64(static_cast<int64_t>(v));
        return;
    }
    pk.pack_double(v);
}

}  // namespace

// "backends[1]" and friends, built only when a check fails.
static std::string backend_loc(size_t b) { return "backends[" + std::to_string(b) + "]"; }

Result<void> validate(const Message &msg)
{
    if (msg.version < k_min_protocol_version || msg.version > k_protocol_version)
        return Error::invalid("version must be " + std::to_string(k_min_protocol_version) + " to " +
                              std::to_string(k_protocol_version));
    if (msg.version < k_acked_protocol_version && msg.base != 0)
        return Error::invalid("base needs protocol version " + std::to_string(k_acked_protocol_version));
    if (msg.base > msg.seq)
        return Error::invalid("base must not exceed seq");
    if (!valid_identifier(msg.host))
        return Error::invalid("host must be 1 to 128 printable ASCII bytes without '/'");
    if (!valid_identifier(msg.job_id))
        return Error::invalid("job must be 1 to 128 printable ASCII bytes without '/'");
    if (msg.sender.empty() || msg.sender.size() > k_max_name_length || !printable_ascii(msg.sender))
        return Error::invalid("sender must be 1 to 128 printable ASCII bytes");
    if (msg.time_ns < 0)
        return Error::invalid("t must not be negative");
    if (!std::isfinite(msg.period_s) || msg.period_s < 0)
        return Error::invalid("period must be a finite number >= 0");
    if (msg.meta.size() > k_max_meta_entries)
        return Error::invalid("meta has more than " + std::to_string(k_max_meta_entries) + " entries");
    for (size_t i = 0; i < msg.meta.size(); ++i) {
        const auto &[key, value] = msg.meta[i];
        if (!snake_name(key, k_max_meta_key_length))
            return Error::invalid("meta key '" + key + "' must be 1 to 64 bytes of [a-z0-9_]");
        if (value.size() > k_max_text_length || !printable_text(value))
            return Error::invalid("meta." + key + " must be at most 1024 bytes of text");
        for (size_t j = 0; j < i; ++j)
            if (msg.meta[j].first == key)
                return Error::invalid("meta key '" + key + "' appears twice");
    }
    if (msg.backends.size() > k_max_backends)
        return Error::invalid("more than " + std::to_string(k_max_backends) + " backends");
    for (size_t b = 0; b < msg.backends.size(); ++b) {
        const auto &blk = msg.backends[b];
        if (!snake_name(blk.name, k_max_backend_name_length))
            return Error::invalid(backend_loc(b) + ".name must be 1 to 64 bytes of [a-z0-9_]");
        for (size_t j = 0; j < b; ++j)
            if (msg.backends[j].name == blk.name)
                return Error::invalid(backend_loc(b) + ".name '" + blk.name + "' appears twice");
        if (blk.metrics.size() > k_max_metrics_per_backend)
            return Error::invalid(backend_loc(b) + " has more than " + std::to_string(k_max_metrics_per_backend) +
                                  " metrics");
        if (blk.values.size() != blk.metrics.size())
            return Error::invalid(backend_loc(b) + " has " + std::to_string(blk.metrics.size()) + " metrics but " +
                                  std::to_string(blk.values.size()) + " values");
        if (blk.status.size() > k_max_text_length || !printable_text(blk.status))
            return Error::invalid(backend_loc(b) + ".status must be at most 1024 bytes of text");
        if (size_t m = rules::first_repeated_name(
                blk.metrics, [](const MetricDescriptor &d) -> const std::string & { return d.name; });
            m < blk.metrics.size())
            return Error::invalid(backend_loc(b) + ".metrics[" + std::to_string(m) + "] name '" + blk.metrics[m].name +
                                  "' appears twice");
        for (size_t m = 0; m < blk.metrics.size(); ++m) {
            const auto &d = blk.metrics[m];
            auto metric_loc = [&] { return backend_loc(b) + ".metrics[" + std::to_string(m) + "]"; };
            if (auto why = check_metric_name(d.name); !why.empty())
                return Error::invalid(metric_loc() + " name " + why);
            if (auto why = check_unit(d.unit); !why.empty())
                return Error::invalid(metric_loc() + " unit " + why);
            if (std::isinf(blk.values[m]))
                return Error::invalid(backend_loc(b) + ".values[" + std::to_string(m) + "] is not finite");
        }
    }
    return ok();
}

Result<void> encode(const Message &msg, std::string &out, size_t *base_at)
{
    if (auto v = validate(msg); !v)
        return v.error();
    out.clear();
    StringWriter writer{out};
    Packer pk(writer);

    uint32_t fields = 8;  // v kind host job sender seq t backends
    fields += msg.dropped ? 1 : 0;
    fields += msg.period_s > 0 ? 1 : 0;
    fields += msg.ack ? 1 : 0;
    const bool acked = wants_ack(msg);
    fields += acked ? 1 : 0;
    fields += msg.meta.empty() ? 0 : 1;
    pk.pack_map(fields);
    pack::str(pk, "v");
    pk.pack_uint32(msg.version);
    pack::str(pk, "kind");
    pack::str(pk, to_string(msg.kind));
    pack::str(pk, "host");
    pack::str(pk, msg.host);
    pack::str(pk, "job");
    pack::str(pk, msg.job_id);
    pack::str(pk, "sender");
    pack::str(pk, msg.sender);
    pack::str(pk, "seq");
    pk.pack_uint64(msg.seq);
    pack::str(pk, "t");
    pk.pack_int64(msg.time_ns);
    if (msg.dropped) {
        pack::str(pk, "dropped");
        pk.pack_uint64(msg.dropped);
    }
    if (msg.period_s > 0) {
        pack::str(pk, "period");
        pk.pack_double(msg.period_s);
    }
    if (msg.ack) {
        pack::str(pk, "ack");
        pk.pack_uint64(msg.ack);
    }
    if (acked) {
        pack::str(pk, "base");
        out.push_back(static_cast<char>(0xcf));  // uint 64, whatever the value: patch_base rewrites it in place
        if (base_at)
            *base_at = out.size();
        out.append(8, '\0');
        patch_base(out, out.size() - 8, msg.base);
    }
    if (!msg.meta.empty()) {
        pack::str(pk, "meta");
        pk.pack_map(static_cast<uint32_t>(msg.meta.size()));
        for (const auto &[k, v] : msg.meta) {
            pack::str(pk, k);
            pack::str(pk, v);
        }
    }
    pack::str(pk, "backends");
    pk.pack_array(static_cast<uint32_t>(msg.backends.size()));
    for (const auto &blk : msg.backends) {
        pk.pack_map(blk.status.empty() ? 4 : 5);
        pack::str(pk, "name");
        pack::str(pk, blk.name);
        pack::str(pk, "scope");
        pack::str(pk, to_string(blk.scope));
        pack::str(pk, "metrics");
        pk.pack_array(static_cast<uint32_t>(blk.metrics.size()));
        for (const auto &d : blk.metrics) {
            pk.pack_array(3);
            pack::str(pk, d.name);
            pack::str(pk, d.unit);
            pack::str(pk, to_string(d.kind));
        }
        pack::str(pk, "values");
        pk.pack_array(static_cast<uint32_t>(blk.values.size()));
        for (double v : blk.values)
            pack_value(pk, v);
        if (!blk.status.empty()) {
            pack::str(pk, "status");
            pack::str(pk, blk.status);
        }
    }
    if (out.size() > k_max_message_bytes)
        return Error::invalid("encoded message is " + std::to_string(out.size()) + " bytes, over the " +
                              std::to_string(k_max_message_bytes) + "-byte limit");
    return ok();
}

void patch_base(std::string &bytes, size_t base_at, uint64_t base)
{
    for (int i = 7; i >= 0; --i, base >>= 8)
        bytes[base_at + static_cast<size_t>(i)] = static_cast<char>(base & 0xff);
}

}  // namespace colmet::wire
