#include "node/delivery/SpoolFormat.hpp"

#include <libdeflate.h>

#include <array>
#include <cstring>

namespace colmet::node {
namespace {

constexpr std::array<std::string_view, 6> k_keys = {"job_id",  "sender",           "uri",
                                                    "ack_uri", "curve_server_key", "curve_secret_key"};

std::string *field(SpoolHeader &h, std::string_view key)
{
    std::string *fields[] = {&h.job_id, &h.sender, &h.uri, &h.ack_uri, &h.curve_server_key, &h.curve_secret_key};
    for (size_t i = 0; i < k_keys.size(); ++i)
        if (k_keys[i] == key)
            return fields[i];
    return nullptr;
}

void put_u32(std::string &out, uint32_t v)
{
    for (int i = 0; i < 4; ++i, v >>= 8)
        out.push_back(static_cast<char>(v & 0xff));
}

void put_u64(std::string &out, uint64_t v)
{
    for (int i = 0; i < 8; ++i, v >>= 8)
        out.push_back(static_cast<char>(v & 0xff));
}

uint64_t get_le(const char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
}

uint32_t crc_of(uint32_t crc, std::string_view bytes) { return libdeflate_crc32(crc, bytes.data(), bytes.size()); }

std::string frame_prefix(uint32_t size, uint32_t crc)
{
    std::string out(k_spool_frame_mark);
    put_u32(out, size);
    put_u32(out, crc);
    return out;
}

std::optional<SpoolHeader> parse_header(std::string_view text)
{
    SpoolHeader h;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        if (nl == std::string_view::npos)
            return std::nullopt;
        const std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl + 1);
        const size_t eq = line.find('=');
        if (eq == std::string_view::npos)
            return std::nullopt;
        if (std::string *f = field(h, line.substr(0, eq)))
            f->assign(line.substr(eq + 1));
        // Unknown keys: written by a later version, not needed to send.
    }
    if (h.job_id.empty() || h.sender.empty() || h.uri.empty() || h.ack_uri.empty())
        return std::nullopt;
    return h;
}

}  // namespace

Result<void> check_spool_header(const SpoolHeader &h)
{
    SpoolHeader copy = h;
    for (auto key : k_keys) {
        const std::string &value = *field(copy, key);
        if (value.find('\n') != std::string::npos || value.find('\0') != std::string::npos)
            return Error::invalid("spool header: " + std::string(key) + " spans lines");
    }
    if (h.job_id.empty() || h.sender.empty() || h.uri.empty() || h.ack_uri.empty())
        return Error::invalid("spool header: the job, the sender and both collector endpoints are needed");
    return ok();
}

std::string spool_file_start(const SpoolHeader &header)
{
    std::string payload = "H";
    SpoolHeader copy = header;
    for (auto key : k_keys) {
        payload.append(key);
        payload.push_back('=');
        payload.append(*field(copy, key));
        payload.push_back('\n');
    }
    std::string out(k_spool_magic);
    out += frame_prefix(static_cast<uint32_t>(payload.size()), crc_of(0, payload));
    out += payload;
    return out;
}

std::string spool_message_prefix(uint64_t seq, int64_t time_ns, uint32_t base_at, std::string_view message)
{
    std::string fixed = "M";
    put_u64(fixed, seq);
    put_u64(fixed, static_cast<uint64_t>(time_ns));
    put_u32(fixed, base_at);
    const uint32_t crc = crc_of(crc_of(0, fixed), message);
    std::string out = frame_prefix(static_cast<uint32_t>(fixed.size() + message.size()), crc);
    out += fixed;
    return out;
}

SpoolContents parse_spool(std::string_view bytes)
{
    SpoolContents out;
    if (bytes.substr(0, k_spool_magic.size()) != k_spool_magic) {
        out.damaged_bytes = bytes.size();
        out.damaged_frames = bytes.empty() ? 0 : 1;
        return out;
    }
    size_t pos = k_spool_magic.size();
    bool first = true;
    bool in_damage = false;
    auto skip_damage = [&](size_t from) {
        // To the next frame mark, or the end.
        size_t next = bytes.find(k_spool_frame_mark, from + 1);
        if (next == std::string_view::npos)
            next = bytes.size();
        out.damaged_bytes += next - from;
        if (!in_damage)
            ++out.damaged_frames;
        in_damage = true;
        return next;
    };
    while (pos < bytes.size()) {
        const std::string_view rest = bytes.substr(pos);
        if (rest.size() < k_spool_frame_overhead || rest.substr(0, 4) != k_spool_frame_mark) {
            pos = skip_damage(pos);
            continue;
        }
        const uint64_t size = get_le(rest.data() + 4, 4);
        const auto crc = static_cast<uint32_t>(get_le(rest.data() + 8, 4));
        if (size == 0 || size > k_max_spool_payload || size > rest.size() - k_spool_frame_overhead) {
            pos = skip_damage(pos);
            continue;
        }
        const std::string_view payload = rest.substr(k_spool_frame_overhead, size);
        if (crc_of(0, payload) != crc) {
            pos = skip_damage(pos);
            continue;
        }
        const size_t frame_end = pos + k_spool_frame_overhead + size;
        if (first) {
            first = false;
            if (payload[0] == 'H')
                out.header = parse_header(payload.substr(1));
            if (!out.header)  // a spool without its header cannot be sent anywhere
                return out;
            in_damage = false;
            pos = frame_end;
            continue;
        }
        if (payload[0] != 'M' || size < k_spool_message_overhead) {
            pos = skip_damage(pos);
            continue;
        }
        in_damage = false;
        SpooledRecord r;
        r.seq = get_le(payload.data() + 1, 8);
        r.time_ns = static_cast<int64_t>(get_le(payload.data() + 9, 8));
        r.base_at = static_cast<uint32_t>(get_le(payload.data() + 17, 4));
        r.offset = pos + k_spool_frame_overhead + k_spool_message_overhead;
        r.size = static_cast<uint32_t>(size - k_spool_message_overhead);
        pos = frame_end;
        if (static_cast<uint64_t>(r.base_at) + 8 > r.size ||
            (!out.records.empty() && r.seq <= out.records.back().seq)) {
            ++out.out_of_order;
            continue;
        }
        out.records.push_back(r);
    }
    return out;
}

}  // namespace colmet::node
