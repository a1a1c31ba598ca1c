// Turning points into the body of one HTTP request, in either protocol:
//   remote_write  Prometheus remote write 1.0: a protobuf WriteRequest,
//                 snappy-compressed (VictoriaMetrics, vmagent, Prometheus,
//                 Thanos Receive, Mimir);
//   influx        InfluxDB line protocol, nanosecond timestamps (InfluxDB
//                 1.x /write and 2.x /api/v2/write, VictoriaMetrics, Telegraf).
// One point is one value of one series at one time. Not thread-safe.
#pragma once

#include "collector/sinks/tsdb/Naming.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::collector::tsdb {

enum class Protocol : uint8_t { remote_write, influx };
std::optional<Protocol> parse_protocol(std::string_view name);  // "remote-write", "influx"
const char *protocol_name(Protocol p);

struct Label {
    std::string_view name;
    std::string_view value;
};

// The labels of a point besides its name; an empty one is left out.
// `context`: the job's context labels (account, partition, queue: the
// labelled keys of scheduler/JobContext.hpp), sorted by name; each name
// sorts before "event" or after "gpu" (the event labels) and differs from
// the four above.
struct Labels {
    std::string_view cluster;
    std::string_view host;
    std::string_view job_id;
    std::string_view user;
    std::span<const Label> context = {};
};

// A series' name in an encoder's own form (remote write: its label
// fields; line protocol: escaped), made once by prepare() and kept by the
// caller for the points of that series, as TsdbSink keeps one for each
// metric of a message's layout: its bytes are then copied, not made, at
// every point, and remote write refers back to where it last wrote them
// instead of writing them again.
struct PreparedSeries {
    std::string name;   // remote write: the __name__ label; line protocol: the measurement
    std::string event;  // remote write: the event label; line protocol: ",event=..."; empty: none
    std::string field;  // line protocol: " <field>="
    // Remote write: the batch that last held these bytes (batch numbers are
    // never reused, by any encoder), and where in its uncompressed body.
    uint64_t batch = 0;
    uint64_t name_at = 0;
    uint64_t event_at = 0;
};

class Encoder {
public:
    virtual ~Encoder() = default;
    // The labels of the points added from now on. They are encoded here,
    // once (a message's points share them), and copied: `labels` need not
    // outlive the call.
    virtual void labels(const Labels &labels) = 0;
    virtual PreparedSeries prepare(const SeriesName &name) const = 0;
    // A finite value (the caller skips NaN and infinities), with the labels
    // last given. `series` is from this encoder's prepare().
    virtual void add(PreparedSeries &series, double value, int64_t time_ns) = 0;
    // The same, for a series met once (its name is prepared for this point).
    void add(const SeriesName &name, double value, int64_t time_ns)
    {
        PreparedSeries series = prepare(name);
        add(series, value, time_ns);
    }
    virtual size_t points() const = 0;
    // The request body of every point added since the last take(), which
    // starts a new one.
    virtual std::string take() = 0;
    // The HTTP headers the body needs ("Name: value").
    virtual std::vector<std::string> headers() const = 0;
};

std::unique_ptr<Encoder> make_encoder(Protocol protocol);

}  // namespace colmet::collector::tsdb
