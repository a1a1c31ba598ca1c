// libFuzzer target for the control protocol (node/control/ControlProtocol),
// what a job's colmet-node reads from anyone who connects to its socket
// and what colmet-ctl reads back. Any bytes must be either refused with an
// error or decoded into a value that survives a round trip: encoding what
// was decoded and decoding it again gives the same request or answer. A
// decoded request also keeps to the bounds decode_request promises. The
// same bytes fed to FrameReader in pieces must never be read past the
// frame, and a complete frame's body is its declared length.
#include "node/control/ControlProtocol.hpp"
#include "scheduler/JobContext.hpp"
#include "spec/event_list.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace colmet::node::control;

namespace {

void check_request(const ControlRequest &r)
{
    if (r.period_s && (!std::isfinite(*r.period_s) || *r.period_s < 0.1 || *r.period_s > 3600))
        std::abort();
    if (r.perfhw_events && (r.perfhw_events->empty() || r.perfhw_events->size() > colmet::spec::k_max_events))
        std::abort();
    // Only known keys, values as colmet-job start --context takes them.
    for (const auto &[key, value] : r.context) {
        auto item = colmet::sched::parse_context_item(key + "=" + value);
        if (!item || item->second != value || r.context.size() > colmet::sched::context_keys().size())
            std::abort();
    }
}

void request_round_trip(std::string_view bytes)
{
    if (auto r = decode_request(bytes)) {
        check_request(*r);
        auto again = decode_request(encode_request(*r));
        if (!again || !(*again == *r))
            std::abort();
    }
    if (auto legacy = decode_legacy_configure(bytes)) {
        check_request(*legacy);
        if (!legacy->period_s && !legacy->perfhw_events)
            std::abort();  // either key may be missing, not both
    }
}

// What an answer's encoding keeps of it: an accepted answer has no code or
// reason, a rejected one no list of changes, and a reason is cut to
// k_max_reason_length.
ControlAnswer canonical(ControlAnswer a)
{
    if (a.accepted) {
        a.code = Rejection::invalid;
        a.reason.clear();
    } else {
        a.changed.clear();
        a.reason.resize(std::min(a.reason.size(), k_max_reason_length));
    }
    if (a.state && std::isnan(a.state->period_s))
        a.state->period_s = -1;  // NaN compares unequal to itself
    return a;
}

void answer_round_trip(std::string_view bytes)
{
    auto a = decode_answer(bytes);
    if (!a)
        return;
    const std::string encoded = encode_answer(*a);
    if (encoded.size() > k_max_frame_bytes)
        return;  // the encoding fills in what a short answer left out: past a frame, it is never sent
    auto again = decode_answer(encoded);
    if (!again || !(canonical(*again) == canonical(*a)))
        std::abort();
}

// The bytes fed in pieces of at most wanted() bytes (sizes taken from the
// bytes themselves), as the server and colmet-ctl read a socket, and all at
// once: both read the same frame, and never a byte past it.
void frames(std::string_view bytes)
{
    FrameReader reader;
    size_t at = 0;
    while (at < bytes.size() && reader.status() == FrameReader::Status::incomplete) {
        const size_t piece =
            std::min({bytes.size() - at, reader.wanted(), size_t{1} + static_cast<unsigned char>(bytes[at]) % 16});
        reader.feed(bytes.substr(at, piece));
        at += piece;
    }
    FrameReader whole;
    whole.feed(bytes);
    if (whole.status() != reader.status())
        std::abort();
    if (reader.status() != FrameReader::Status::complete)
        return;
    const size_t declared = reader.declared();
    if (declared == 0 || declared > k_max_frame_bytes || reader.wanted() != 0 ||
        at != k_frame_header_bytes + declared || reader.body() != bytes.substr(k_frame_header_bytes, declared) ||
        whole.body() != reader.body())
        std::abort();
    const std::string again = frame(reader.body());
    if (again.size() != k_frame_header_bytes + declared || std::string_view(again).substr(0, at) != bytes.substr(0, at))
        std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    request_round_trip(bytes);
    answer_round_trip(bytes);
    frames(bytes);
    return 0;
}
