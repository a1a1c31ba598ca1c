#include "node/control/ControlDecoding.hpp"

#include "node/NodeOptions.hpp"
#include "node/control/ControlProtocol.hpp"
#include "spec/event_list.hpp"
#include "wire/rules.hpp"

#include <cmath>
#include <cstdio>

namespace colmet::node::control::detail {

namespace type = msgpack::type;

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
    case type::POSITIVE_INTEGER:
        return static_cast<double>(o.via.u64);
    case type::NEGATIVE_INTEGER:
        return static_cast<double>(o.via.i64);
    case type::FLOAT32:
    case type::FLOAT64:
        return o.via.f64;
    default:
        return std::nullopt;
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

Result<std::vector<std::string>> check_events(const std::vector<std::string> &items, const std::string &field)
{
    for (const auto &item : items)
        if (!wire::rules::printable_ascii(item))
            return Error::invalid(field + ": event names are printable ASCII");
    auto names = spec::split_event_list(items);
    if (!names)
        return Error::invalid(field + ": " + names.error().message());
    if (names->empty())
        return Error::invalid(field + ": no event given");
    if (names->size() > spec::k_max_events)
        return Error::invalid(field + ": more than " + std::to_string(spec::k_max_events) + " events");
    return names;
}

std::string shown_key(std::string_view key)
{
    std::string shown(key.substr(0, 64));
    if (!wire::rules::printable_ascii(shown))
        shown = "(not printable)";
    return shown;
}

}  // namespace colmet::node::control::detail
