// libFuzzer target for the collector's path from frames to HDF5 files and
// time-series request bodies: sequences of messages, not single frames. The
// input is a sequence of records (SinkInput.hpp): each frame goes through
// Collector::handle_frame (decoding, admission checks, sequence tracking)
// into an Hdf5Sink and a TsdbSink, and the records' control bits drive
// tick() (flushes, idle closes) and flush_all(). Every request body the
// TsdbSink makes is checked: remote write must be a valid snappy block of
// exactly as many TimeSeries as points, line protocol exactly one line a
// point (the protocols alternate at each reset).
// The collector's clock advances 10 ms per frame. Crashes, leaks, sanitizer
// reports or timeouts are bugs.
//
// The collector and its sink live across inputs, as in the daemon: a later
// input appends to the files of an earlier one (the reopen paths). Every
// k_reset_every inputs everything is closed, the output directory (under
// $TMPDIR) is emptied, and a fresh collector starts. To reproduce a crash
// from one input alone, set COLMET_FUZZ_SINK_RESET=1 (a reset before every
// input); COLMET_FUZZ_LOG=1 keeps the collector's log, COLMET_FUZZ_SINK_KEEP=1
// the files of the last inputs (the directory is named at exit).
//
// The seeds (tests/fuzz/corpus/sink/) carry fixed times, so the admission
// check of times is off here; every other check is on.
// make_sink_seeds (make_sink_seeds.cpp) remakes them:
//   build-fuzz/bin/make_sink_seeds tests/fuzz/corpus/sink
#include "SinkInput.hpp"
#include "collector/Collector.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "collector/sinks/tsdb/TsdbSink.hpp"

#include <snappy.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace fs = std::filesystem;
using namespace colmet;

namespace {

constexpr unsigned k_reset_every = 200;
constexpr int64_t k_start_ns = 1'000'000'000'000;  // the fake CLOCK_MONOTONIC after a reset
constexpr int64_t k_frame_ns = 10'000'000;

struct Harness {
    fs::path dir;
    std::unique_ptr<collector::Collector> collector;
    int64_t now_ns = k_start_ns;
    unsigned inputs = 0;
    unsigned reset_every = k_reset_every;
    unsigned resets = 0;
};

// Remote write's body, uncompressed: WriteRequest.timeseries fields (tag 1,
// length-delimited) back to back, and nothing else. Returns their count.
uint64_t count_timeseries(const std::string &raw)
{
    uint64_t count = 0;
    for (size_t at = 0; at < raw.size(); ++count) {
        if (raw[at++] != 0x0a)
            return UINT64_MAX;
        uint64_t length = 0;
        for (int shift = 0;; shift += 7) {
            if (at >= raw.size() || shift > 63)
                return UINT64_MAX;
            const auto byte = static_cast<unsigned char>(raw[at++]);
            length |= uint64_t{byte & 0x7fu} << shift;
            if ((byte & 0x80) == 0)
                break;
        }
        if (length > raw.size() - at)
            return UINT64_MAX;
        at += length;
    }
    return count;
}

void check_body(collector::tsdb::Protocol protocol, const std::string &body, uint64_t points)
{
    uint64_t found = 0;
    if (protocol == collector::tsdb::Protocol::remote_write) {
        std::string raw;
        if (!snappy::Uncompress(body.data(), body.size(), &raw)) {
            std::fprintf(stderr, "fuzz_sink: a remote write body is not a valid snappy block\n");
            std::abort();
        }
        found = count_timeseries(raw);
    } else {
        found = static_cast<uint64_t>(std::count(body.begin(), body.end(), '\n'));
        if (!body.empty() && body.back() != '\n')
            found = UINT64_MAX;
    }
    if (found != points) {
        std::fprintf(stderr, "fuzz_sink: a %s body holds %llu points, not %llu\n",
                     collector::tsdb::protocol_name(protocol), static_cast<unsigned long long>(found),
                     static_cast<unsigned long long>(points));
        std::abort();
    }
}

// Only job files, corrupt ones set aside and the summaries' JSON (each
// one read back whole) may appear in the directory.
void check_and_empty(const fs::path &dir)
{
    for (const auto &entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        const bool summary = name.ends_with(".json");
        const bool job_file = name.ends_with(".h5") || name.find(".h5.corrupt-") != std::string::npos || summary;
        if (!entry.is_regular_file() || !job_file) {
            std::fprintf(stderr, "fuzz_sink: unexpected entry %s\n", entry.path().c_str());
            std::abort();
        }
        if (summary)
            if (auto s = collector::read_summary_file(entry.path()); !s) {
                std::fprintf(stderr, "fuzz_sink: %s\n", s.error().message().c_str());
                std::abort();
            }
    }
    for (const auto &entry : fs::directory_iterator(dir))
        fs::remove(entry.path());
}

void reset(Harness &h)
{
    if (h.collector) {
        h.collector->close_all();
        h.collector.reset();
    }
    check_and_empty(h.dir);
    collector::Hdf5Options options;
    options.dir = h.dir;
    options.max_open_files = 4;  // the least recently used files close too
    options.idle_close_s = 30;
    options.flush_interval_s = 2;
    options.batch_rows = 8;  // segments fill within one input
    auto sink = collector::make_hdf5_sink(options);
    if (!sink) {
        std::fprintf(stderr, "fuzz_sink: %s\n", sink.error().message().c_str());
        std::abort();
    }
    std::vector<std::unique_ptr<collector::Sink>> sinks;
    sinks.push_back(std::move(*sink));
    collector::tsdb::TsdbOptions tsdb;
    tsdb.protocol = h.resets++ % 2 == 0 ? collector::tsdb::Protocol::remote_write : collector::tsdb::Protocol::influx;
    tsdb.cluster = "fuzz";
    tsdb.batch_points = 200;  // several batches within one input
    sinks.push_back(collector::tsdb::TsdbSink::with_submit(
        tsdb, [protocol = tsdb.protocol](const std::string &body, uint64_t points, uint64_t) {
            check_body(protocol, body, points);
            // Some batches are dropped: their losses go into the HDF5 files.
            return std::optional(points % 3 == 0 ? collector::tsdb::BatchFate::dropped
                                                 : collector::tsdb::BatchFate::stored);
        }));
    h.collector =
        std::make_unique<collector::Collector>(std::move(sinks), collector::AdmissionLimits{.max_clock_skew_s = 0});
    h.now_ns = k_start_ns;
    h.inputs = 0;
}

Harness &harness()
{
    static Harness h = [] {
        Harness made;
        std::string pattern = (fs::temp_directory_path() / "colmet-fuzz-sink.XXXXXX").string();
        if (!mkdtemp(pattern.data())) {
            std::perror("fuzz_sink: mkdtemp");
            std::abort();
        }
        made.dir = pattern;
        if (const char *every = std::getenv("COLMET_FUZZ_SINK_RESET"))
            made.reset_every = std::max(1, std::atoi(every));
        return made;
    }();
    return h;
}

void remove_dir()
{
    auto &h = harness();
    h.collector.reset();
    if (std::getenv("COLMET_FUZZ_SINK_KEEP")) {
        std::fprintf(stderr, "fuzz_sink: files kept in %s\n", h.dir.c_str());
        return;
    }
    std::error_code ec;
    fs::remove_all(h.dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    if (!std::getenv("COLMET_FUZZ_LOG"))
        spdlog::set_level(spdlog::level::off);
    reset(harness());
    std::atexit(remove_dir);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Harness &h = harness();
    if (h.inputs++ >= h.reset_every)
        reset(h);
    collector::Collector &c = *h.collector;
    std::vector<wire::Ack> acks;
    fuzz::for_each_record(data, size, [&](std::string_view frame, fuzz::After after) {
        if (!frame.empty()) {
            h.now_ns += k_frame_ns;
            c.handle_frame(frame.data(), frame.size(), false, h.now_ns);
        }
        switch (after) {
        case fuzz::After::nothing:
            break;
        case fuzz::After::tick:
            h.now_ns += 1'000'000'000;
            c.tick(h.now_ns);
            break;
        case fuzz::After::flush_all:
            c.flush_all(h.now_ns);
            break;
        case fuzz::After::idle:
            h.now_ns += 61'000'000'000;
            c.tick(h.now_ns);
            break;
        }
        // Acknowledged senders: what the sink acknowledges, as serve()
        // takes it after every wake-up.
        acks.clear();
        c.take_acks(acks);
        for (const auto &ack : acks)
            if (ack.sender.empty())
                std::abort();
    });
    const auto &s = c.stats();
    if (s.accepted + s.rejected > s.received)
        std::abort();
    return 0;
}
