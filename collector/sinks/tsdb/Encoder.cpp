#include "collector/sinks/tsdb/Encoder.hpp"

#include "collector/sinks/tsdb/SnappyWriter.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <memory>

namespace colmet::collector::tsdb {
namespace {

// The labels of a point in name order (both protocols keep it): __name__,
// [account], cluster, event or gpu, host, job_id, [partition], [queue],
// user. A message's points share all but the name and event: encoded once
// by `append(out, key, value)`, into the part before event and the part
// after it.
template <typename Append>
void encode_shared_labels(const Labels &l, std::string &before_event, std::string &after_event, Append append)
{
    before_event.clear();
    after_event.clear();
    const std::array<Label, 4> fixed{
        {{"cluster", l.cluster}, {"host", l.host}, {"job_id", l.job_id}, {"user", l.user}}};
    size_t f = 0;
    size_t c = 0;
    while (f < fixed.size() || c < l.context.size()) {
        const bool take_context = c < l.context.size() && (f == fixed.size() || l.context[c].name < fixed[f].name);
        const Label &label = take_context ? l.context[c++] : fixed[f++];
        append(label.name < std::string_view("event") ? before_event : after_event, label.name, label.value);
    }
}

// A number for each batch of every encoder: a PreparedSeries' offsets hold
// in the batch that wrote them only.
uint64_t next_batch()
{
    static std::atomic<uint64_t> last{0};
    return ++last;
}

// Remote write's WriteRequest, written straight as protobuf bytes: one
// TimeSeries (labels, one Sample) per point. The message has four types and
// six fields, and libprotobuf's object model cost 0.38 us a point here
// (objects, strings, a second pass for sizes), which alone took more than
// the collector's whole budget per message; these bytes are what
// libprotobuf writes (tests/unit/collector/sinks/tsdb decodes them with it).
//
// The bytes go straight into a snappy block (SnappyWriter.hpp): a point's
// labels and timestamp, the same as the point before's, and its name, the
// same as in the message before, are written as references back to their
// last copy; its length and value are literal. About 30 bytes a point,
// where snappy::Compress makes about 14 of the benchmark's points (whose
// values repeat) at several times the CPU (docs/performance.md).
class RemoteWriteEncoder final : public Encoder {
public:
    using Encoder::add;

    // Remote write requires the labels sorted by name.
    void labels(const Labels &l) override
    {
        encode_shared_labels(l, m_new_cluster, m_new_other, append_label);
        if (m_new_cluster != m_cluster) {
            m_cluster.swap(m_new_cluster);
            m_cluster_at = k_nowhere;
        }
        if (m_new_other != m_other) {
            m_other.swap(m_new_other);
            m_other_at = k_nowhere;
        }
    }

    PreparedSeries prepare(const SeriesName &name) const override
    {
        PreparedSeries s;
        append_label(s.name, "__name__", name.full());
        append_label(s.event, name.event_label, name.event);
        return s;
    }

    void add(PreparedSeries &s, double value, int64_t time_ns) override
    {
        const int64_t ms = time_ns / 1'000'000;
        const size_t sample = 9 + 1 + varint_size(static_cast<uint64_t>(ms));
        const size_t series = s.name.size() + m_cluster.size() + s.event.size() + m_other.size() + field_size(sample);
        char *head = m_out.literal_space(16);
        m_out.literal_end(static_cast<size_t>(tag_length(head, 1, series) - head));  // WriteRequest.timeseries
        const bool written = s.batch == m_batch;  // name and event: in this batch already
        s.batch = m_batch;
        put(s.name, s.name_at, written);  // TimeSeries.labels, sorted: __name__,
        if (s.event.empty() && !m_cluster.empty() && m_cluster_at != k_nowhere &&
            m_other_at == m_cluster_at + m_cluster.size()) {
            const uint64_t at = m_out.position();  // cluster and host, job_id, user: one reference
            m_out.copy(m_cluster_at, m_cluster.size() + m_other.size());
            m_cluster_at = at;
            m_other_at = at + m_cluster.size();
        } else {
            put(m_cluster, m_cluster_at, m_cluster_at != k_nowhere);  // cluster,
            put(s.event, s.event_at, written);                        // event,
            put(m_other, m_other_at, m_other_at != k_nowhere);        // host, job_id, user
        }
        char *tail = m_out.literal_space(32);
        char *p = tag_length(tail, 2, sample);  // TimeSeries.samples
        *p++ = static_cast<char>(0x09);         // Sample.value, fixed64 little-endian
        uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        for (int b = 0; b < 8; ++b)
            *p++ = static_cast<char>((bits >> (8 * b)) & 0xff);
        // Sample.timestamp, varint: the same as the point before's in a
        // message, so most often a reference too.
        const size_t time_size = 1 + varint_size(static_cast<uint64_t>(ms));
        if (ms == m_time_ms && m_time_at != k_nowhere) {
            m_out.literal_end(static_cast<size_t>(p - tail));
            const uint64_t at = m_out.position();
            m_out.copy(m_time_at, time_size);
            m_time_at = at;
        } else {
            *p++ = static_cast<char>(0x10);
            p = varint(p, static_cast<uint64_t>(ms));
            m_out.literal_end(static_cast<size_t>(p - tail));
            m_time_at = m_out.position() - time_size;
            m_time_ms = ms;
        }
        ++m_points;
    }

    size_t points() const override { return m_points; }

    std::string take() override
    {
        m_batch = next_batch();
        m_cluster_at = m_other_at = m_time_at = k_nowhere;
        m_points = 0;
        return m_out.take();
    }

    std::vector<std::string> headers() const override
    {
        return {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                "X-Prometheus-Remote-Write-Version: 0.1.0"};
    }

private:
    static constexpr uint64_t k_nowhere = UINT64_MAX;

    // `bytes`, as a reference to their copy at `at` if `written`; `at`
    // becomes where they are now.
    void put(const std::string &bytes, uint64_t &at, bool written)
    {
        if (bytes.empty())
            return;
        const uint64_t here = m_out.position();
        if (written)
            m_out.copy(at, bytes.size());
        else
            m_out.literal(bytes.data(), bytes.size());
        at = here;
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
    // A TimeSeries.labels field (a Label: name, value) at the end of `out`;
    // an empty one is left out.
    static void append_label(std::string &out, std::string_view key, std::string_view value)
    {
        if (value.empty())
            return;
        const size_t old = out.size();
        out.resize(old + field_size(label_size(key.size(), value.size())));
        char *p = tag_length(out.data() + old, 1, label_size(key.size(), value.size()));  // TimeSeries.labels
        p = tag_length(p, 1, key.size());                                                 // Label.name
        p = copy(p, key);
        p = tag_length(p, 2, value.size());  // Label.value
        copy(p, value);
    }

    std::string m_cluster;  // the labels before event
    std::string m_other;    // after event: host, job_id, user
    std::string m_new_cluster, m_new_other;
    uint64_t m_cluster_at = k_nowhere;  // where the batch last holds them (uncompressed)
    uint64_t m_other_at = k_nowhere;
    int64_t m_time_ms = 0;  // the last timestamp written, and where
    uint64_t m_time_at = k_nowhere;

    SnappyWriter m_out;
    uint64_t m_batch = next_batch();
    size_t m_points = 0;
};

class InfluxEncoder final : public Encoder {
public:
    using Encoder::add;

    // Tags in key order, as InfluxDB recommends; escaped once per message.
    void labels(const Labels &l) override { encode_shared_labels(l, m_cluster_tags, m_other_tags, tag); }

    PreparedSeries prepare(const SeriesName &name) const override
    {
        PreparedSeries s;
        escape(s.name, name.measurement, false);
        tag(s.event, name.event_label, name.event);
        s.field.push_back(' ');
        escape(s.field, name.field, true);
        s.field.push_back('=');
        return s;
    }

    void add(PreparedSeries &s, double value, int64_t time_ns) override
    {
        m_body.append(s.name);
        m_body.append(m_cluster_tags);
        m_body.append(s.event);
        m_body.append(m_other_tags);
        m_body.append(s.field);
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
