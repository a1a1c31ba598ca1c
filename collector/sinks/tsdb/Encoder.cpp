#include "collector/sinks/tsdb/Encoder.hpp"

#include <snappy.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>

namespace colmet::collector::tsdb {
namespace {

// The labels of a point in name order (both protocols keep it): __name__,
// cluster, event, host, job_id, user. A message's points share all but the
// name and event: encoded once by `append(out, key, value)`, into the part
// before event and the part after it.
template <typename Append>
void encode_shared_labels(const Labels &l, std::string &before_event, std::string &after_event, Append append)
{
    before_event.clear();
    after_event.clear();
    append(before_event, "cluster", l.cluster);
    append(after_event, "host", l.host);
    append(after_event, "job_id", l.job_id);
    append(after_event, "user", l.user);
}

// Remote write's WriteRequest, written straight as protobuf bytes: one
// TimeSeries (labels, one Sample) per point. The message has four types and
// six fields, and libprotobuf's object model cost 0.38 us a point here
// (objects, strings, a second pass for sizes), which alone took more than
// the collector's whole budget per message; these bytes are what
// libprotobuf writes (tests/unit/tsdb decodes them with it).
class RemoteWriteEncoder final : public Encoder {
public:
    // Remote write requires the labels sorted by name.
    void labels(const Labels &l) override { encode_shared_labels(l, m_cluster_bytes, m_other_bytes, append_label); }

    void add(const SeriesName &name, double value, int64_t time_ns) override
    {
        const size_t name_size = name.measurement.size() + 1 + name.field.size();
        const size_t name_label = field_size(label_size(8, name_size));
        const size_t event_label = name.event.empty() ? 0 : field_size(label_size(5, name.event.size()));
        const int64_t ms = time_ns / 1'000'000;
        const size_t sample = 9 + 1 + varint_size(static_cast<uint64_t>(ms));
        const size_t series =
            name_label + m_cluster_bytes.size() + event_label + m_other_bytes.size() + field_size(sample);

        // Written through a pointer into space made once for the point.
        char *p = m_raw.extend(field_size(series));
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
        if (m_raw.size() >= k_fragment)
            compress_fragment(k_fragment);
    }

    size_t points() const override { return m_points; }

    std::string take() override
    {
        if (m_raw.size() > 0)
            compress_fragment(m_raw.size());
        std::string body;
        body.reserve(10 + m_elements.size());
        body.resize(10);
        body.resize(static_cast<size_t>(varint(body.data(), m_raw_total) - body.data()));
        body.append(m_elements);
        m_elements.clear();  // keeps its capacity
        m_raw_total = 0;
        m_points = 0;
        return body;
    }

    std::vector<std::string> headers() const override
    {
        return {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                "X-Prometheus-Remote-Write-Version: 0.1.0"};
    }

private:
    // Bytes written in place: grown without the zero-filling of
    // std::string::resize, which cost as much as the encoding.
    class Buffer {
    public:
        // `n` more bytes at the end, to be written by the caller.
        char *extend(size_t n)
        {
            if (m_size + n > m_capacity) {
                const size_t capacity = std::max(m_capacity * 2, m_size + n);
                auto grown = std::make_unique_for_overwrite<char[]>(capacity);
                if (m_size > 0)
                    std::memcpy(grown.get(), m_data.get(), m_size);
                m_data = std::move(grown);
                m_capacity = capacity;
            }
            char *p = m_data.get() + m_size;
            m_size += n;
            return p;
        }
        // Drops the first `n` bytes.
        void consume(size_t n)
        {
            std::memmove(m_data.get(), m_data.get() + n, m_size - n);
            m_size -= n;
        }
        const char *data() const { return m_data.get(); }
        size_t size() const { return m_size; }

    private:
        std::unique_ptr<char[]> m_data;
        size_t m_size = 0;
        size_t m_capacity = 0;
    };

    // A snappy block is a varint of the uncompressed length followed by
    // elements (literals, back-references), and snappy compresses its input
    // in independent 64 KiB fragments whose references stay inside the
    // fragment. So the body is compressed as it is encoded, one fragment at
    // a time while the bytes are still in cache: a batch's working memory
    // is one fragment plus its compressed bytes (about 13 a point), not the
    // whole uncompressed batch (about 110 a point). The result is the bytes
    // snappy::Compress makes of the whole batch.
    static constexpr size_t k_fragment = size_t{1} << 16;

    void compress_fragment(size_t size)
    {
        const size_t bound = snappy::MaxCompressedLength(size);
        if (m_block.size() < bound)
            m_block.resize(bound);
        size_t length = 0;
        snappy::RawCompress(m_raw.data(), size, m_block.data(), &length);
        size_t header = 0;  // the fragment's own length varint
        while (header < length && (static_cast<unsigned char>(m_block[header]) & 0x80) != 0)
            ++header;
        ++header;
        m_elements.append(m_block.data() + header, length - header);
        m_raw_total += size;
        m_raw.consume(size);  // what is left: the part of the last point past the fragment
    }

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
    // A label's bytes at the end of `out`; an empty one is left out.
    static void append_label(std::string &out, std::string_view key, std::string_view value)
    {
        if (value.empty())
            return;
        const size_t old = out.size();
        out.resize(old + field_size(label_size(key.size(), value.size())));
        label(out.data() + old, key, value);
    }

    std::string m_cluster_bytes;  // the labels before event
    std::string m_other_bytes;    // after event: host, job_id, user

    Buffer m_raw;            // encoded points not compressed yet (under a fragment and a point)
    std::string m_block;     // one fragment, compressed
    std::string m_elements;  // the batch's compressed fragments, without their length headers
    uint64_t m_raw_total = 0;
    size_t m_points = 0;
};

class InfluxEncoder final : public Encoder {
public:
    // Tags in key order, as InfluxDB recommends; escaped once per message.
    void labels(const Labels &l) override { encode_shared_labels(l, m_cluster_tags, m_other_tags, tag); }

    void add(const SeriesName &name, double value, int64_t time_ns) override
    {
        escape(m_body, name.measurement, false);
        m_body.append(m_cluster_tags);
        tag(m_body, "event", name.event);
        m_body.append(m_other_tags);
        m_body.push_back(' ');
        escape(m_body, name.field, true);
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
    static void escape(std::string &out, std::string_view text, bool equals)
    {
        for (char c : text) {
            if (c == ',' || c == ' ' || c == '\\' || (equals && c == '='))
                out.push_back('\\');
            out.push_back(c == '\n' || c == '\r' ? ' ' : c);
        }
    }

    // ",key=value" at the end of `out`; an empty value is left out.
    static void tag(std::string &out, std::string_view key, std::string_view value)
    {
        if (value.empty())
            return;
        out.push_back(',');
        out.append(key);
        out.push_back('=');
        escape(out, value, true);
    }

    template <typename T>
    void number(T value)
    {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
        m_body.append(buf, ec == std::errc() ? end : buf);
    }

    std::string m_cluster_tags;  // the tags before event
    std::string m_other_tags;    // after event: host, job_id, user
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
