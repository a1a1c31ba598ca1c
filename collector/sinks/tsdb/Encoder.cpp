#include "collector/sinks/tsdb/Encoder.hpp"

#include "remote.pb.h"

#include <snappy.h>

#include <charconv>

namespace colmet::collector::tsdb {
namespace {

class RemoteWriteEncoder final : public Encoder {
public:
    void add(const SeriesName &name, const Labels &labels, double value, int64_t time_ns) override
    {
        prompb::TimeSeries *ts = m_request.add_timeseries();
        label(ts, "__name__", name.full());
        // Sorted by name, as remote write requires.
        label(ts, "cluster", labels.cluster);
        label(ts, "event", name.event);
        label(ts, "host", labels.host);
        label(ts, "job_id", labels.job_id);
        label(ts, "user", labels.user);
        prompb::Sample *s = ts->add_samples();
        s->set_value(value);
        s->set_timestamp(time_ns / 1'000'000);
        ++m_points;
        m_bytes += 48 + name.measurement.size() + name.field.size() + name.event.size() + labels.cluster.size() +
                   labels.host.size() + labels.job_id.size() + labels.user.size();
    }

    size_t points() const override { return m_points; }
    size_t size_estimate() const override { return m_bytes; }

    std::string take() override
    {
        std::string raw;
        m_request.SerializeToString(&raw);
        m_request.Clear();  // keeps the allocated series for the next batch
        m_points = 0;
        m_bytes = 0;
        std::string body;
        snappy::Compress(raw.data(), raw.size(), &body);
        return body;
    }

    std::vector<std::string> headers() const override
    {
        return {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                "X-Prometheus-Remote-Write-Version: 0.1.0"};
    }

private:
    static void label(prompb::TimeSeries *ts, const char *name, std::string_view value)
    {
        if (value.empty())
            return;
        prompb::Label *l = ts->add_labels();
        l->set_name(name);
        l->set_value(value.data(), value.size());
    }

    prompb::WriteRequest m_request;
    size_t m_points = 0;
    size_t m_bytes = 0;
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
    size_t size_estimate() const override { return m_body.size(); }

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

    template <typename T> void number(T value)
    {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
        m_body.append(buf, ec == std::errc() ? end : buf);
    }

    std::string m_body;
    size_t m_points = 0;
};

} // namespace

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

} // namespace colmet::collector::tsdb
