#include "collector/sinks/tsdb/Encoder.hpp"

#include <snappy.h>

#include <charconv>
#include <cstring>
#include <initializer_list>

namespace colmet::collector::tsdb {
namespace {

// Remote write's WriteRequest, written straight as protobuf bytes: one
// TimeSeries (labels, one Sample) per point. The message has four types and
// six fields, and libprotobuf's object model cost 0.38 us a point here
// (objects, strings, a second pass for sizes), which alone took more than
// the collector's whole budget per message; these bytes are what
// libprotobuf writes (tests/unit/tsdb decodes them with it).
class RemoteWriteEncoder final : public Encoder {
public:
    void add(const SeriesName &name, const Labels &labels, double value, int64_t time_ns) override
    {
        // Labels sorted by name, as remote write requires: __name__, cluster,
        // event, host, job_id, user. The points of one message share all but
        // __name__ and event: their encoded bytes are kept from the last point.
        if (!same_labels(labels))
            encode_labels(labels);
        const size_t name_size = name.measurement.size() + 1 + name.field.size();
        const size_t name_label = field_size(label_size(8, name_size));
        const size_t event_label = name.event.empty() ? 0 : field_size(label_size(5, name.event.size()));
        const int64_t ms = time_ns / 1'000'000;
        const size_t sample = 9 + 1 + varint_size(static_cast<uint64_t>(ms));
        const size_t series =
            name_label + m_cluster_bytes.size() + event_label + m_other_bytes.size() + field_size(sample);

        // Written through a pointer into space made once for the point.
        const size_t old = m_raw.size();
        m_raw.resize(old + field_size(series));
        char *p = m_raw.data() + old;
        p = tag_length(p, 1, series);                    // WriteRequest.timeseries
        p = tag_length(p, 1, label_size(8, name_size));  // TimeSeries.labels
        p = tag_length(p, 1, 8);                         // Label.name
        p = copy(p, "__name__");
        p = tag_length(p, 2, name_size);  // Label.value
        p = copy(p, name.measurement);
        *p++ = '_';
        p = copy(p, name.field);
        p = copy(p, m_cluster_bytes);
        if (!name.event.empty())
            p = label(p, "event", name.event);
        p = copy(p, m_other_bytes);
        p = tag_length(p, 2, sample);    // TimeSeries.samples
        *p++ = static_cast<char>(0x09);  // Sample.value, fixed64 little-endian
        uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        for (int b = 0; b < 8; ++b)
            *p++ = static_cast<char>((bits >> (8 * b)) & 0xff);
        *p++ = static_cast<char>(0x10);  // Sample.timestamp, varint
        p = varint(p, static_cast<uint64_t>(ms));
        ++m_points;
    }

    size_t points() const override { return m_points; }

    std::string take() override
    {
        // Compressed into a buffer kept from batch to batch; only the
        // compressed body is copied out.
        const size_t bound = snappy::MaxCompressedLength(m_raw.size());
        if (m_compressed.size() < bound)
            m_compressed.resize(bound);
        size_t length = 0;
        snappy::RawCompress(m_raw.data(), m_raw.size(), m_compressed.data(), &length);
        m_raw.clear();  // keeps its capacity
        m_points = 0;
        return std::string(m_compressed.data(), length);
    }

    std::vector<std::string> headers() const override
    {
        return {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                "X-Prometheus-Remote-Write-Version: 0.1.0"};
    }

private:
    static size_t varint_size(uint64_t v)
    {
        size_t n = 1;
        while (v >= 0x80) {
            v >>= 7;
            ++n;
        }
        return n;
    }
    // A length-delimited field of `size` bytes, with its one-byte tag.
    static size_t field_size(size_t size) { return 1 + varint_size(size) + size; }
    static size_t label_size(size_t name, size_t value) { return field_size(name) + field_size(value); }

    static char *varint(char *p, uint64_t v)
    {
        while (v >= 0x80) {
            *p++ = static_cast<char>((v & 0x7f) | 0x80);
            v >>= 7;
        }
        *p++ = static_cast<char>(v);
        return p;
    }
    static char *tag_length(char *p, unsigned field, size_t length)
    {
        *p++ = static_cast<char>((field << 3) | 2);  // wire type 2: length-delimited
        return varint(p, length);
    }
    static char *copy(char *p, std::string_view text)
    {
        std::memcpy(p, text.data(), text.size());
        return p + text.size();
    }
    static char *label(char *p, std::string_view key, std::string_view value)
    {
        p = tag_length(p, 1, label_size(key.size(), value.size()));  // TimeSeries.labels
        p = tag_length(p, 1, key.size());                            // Label.name
        p = copy(p, key);
        p = tag_length(p, 2, value.size());  // Label.value
        return copy(p, value);
    }

    bool same_labels(const Labels &l) const
    {
        return m_have_labels && l.cluster == m_cluster && l.host == m_host && l.job_id == m_job_id && l.user == m_user;
    }
    // The bytes of the labels a message's points share, kept with their values.
    void encode_labels(const Labels &l)
    {
        m_cluster.assign(l.cluster);
        m_host.assign(l.host);
        m_job_id.assign(l.job_id);
        m_user.assign(l.user);
        m_have_labels = true;
        const auto bytes = [](std::string &out,
                              std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
            size_t size = 0;
            for (const auto &[key, value] : kv)
                if (!value.empty())
                    size += field_size(label_size(key.size(), value.size()));
            out.resize(size);
            char *p = out.data();
            for (const auto &[key, value] : kv)
                if (!value.empty())
                    p = label(p, key, value);
        };
        bytes(m_cluster_bytes, {{"cluster", m_cluster}});
        bytes(m_other_bytes, {{"host", m_host}, {"job_id", m_job_id}, {"user", m_user}});
    }

    bool m_have_labels = false;
    std::string m_cluster, m_host, m_job_id, m_user;  // the labels m_*_bytes encode
    std::string m_cluster_bytes;                      // before event
    std::string m_other_bytes;                        // after event: host, job_id, user

    std::string m_raw;
    std::string m_compressed;
    size_t m_points = 0;
};

class InfluxEncoder final : public Encoder {
public:
    void add(const SeriesName &name, const Labels &labels, double value, int64_t time_ns) override
    {
        escape(name.measurement, false);
        tag("cluster", labels.cluster);
        tag("event", name.event);
        tag("host", labels.host);
        tag("job_id", labels.job_id);
        tag("user", labels.user);
        m_body.push_back(' ');
        escape(name.field, true);
        m_body.push_back('=');
        number(value);
        m_body.push_back(' ');
        number(time_ns);
        m_body.push_back('\n');
        ++m_points;
    }

    size_t points() const override { return m_points; }

    std::string take() override
    {
        std::string body;
        body.swap(m_body);
        m_body.reserve(body.capacity());
        m_points = 0;
        return body;
    }

    std::vector<std::string> headers() const override { return {"Content-Type: text/plain; charset=utf-8"}; }

private:
    // Line protocol escaping: in measurements, commas and spaces; in tag
    // keys, tag values and field keys, also '='; a backslash everywhere (or
    // a trailing one would escape the separator after it). A line break
    // cannot be escaped: it becomes a space (ids and names never hold one).
    void escape(std::string_view text, bool equals)
    {
        for (char c : text) {
            if (c == ',' || c == ' ' || c == '\\' || (equals && c == '='))
                m_body.push_back('\\');
            m_body.push_back(c == '\n' || c == '\r' ? ' ' : c);
        }
    }

    void tag(std::string_view key, std::string_view value)
    {
        if (value.empty())
            return;
        m_body.push_back(',');
        m_body.append(key);
        m_body.push_back('=');
        escape(value, true);
    }

    template <typename T>
    void number(T value)
    {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
        m_body.append(buf, ec == std::errc() ? end : buf);
    }

    std::string m_body;
    size_t m_points = 0;
};

}  // namespace

std::optional<Protocol> parse_protocol(std::string_view name)
{
    if (name == "remote-write")
        return Protocol::remote_write;
    if (name == "influx")
        return Protocol::influx;
    return std::nullopt;
}

const char *protocol_name(Protocol p) { return p == Protocol::remote_write ? "remote-write" : "influx"; }

std::unique_ptr<Encoder> make_encoder(Protocol protocol)
{
    if (protocol == Protocol::remote_write)
        return std::make_unique<RemoteWriteEncoder>();
    return std::make_unique<InfluxEncoder>();
}

}  // namespace colmet::collector::tsdb
