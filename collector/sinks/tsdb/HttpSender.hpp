// Posts request bodies to a time-series store from a thread of its own, so
// that a slow or absent store never slows the collector's receiving thread.
//
//   auto sender = HttpSender::start(options, encoder.headers());
//   (*sender)->submit(encoder.take(), points, id);   // never blocks
//   for (auto o : (*sender)->take_outcomes()) ...     // what became of each batch
//   (*sender)->stop(std::chrono::seconds(5));    // at exit: deliver, then give up
//
// Batches wait in a queue bounded in bytes; when a new batch does not fit,
// the oldest are dropped (their points counted in points_dropped), or, with
// keep_oldest(), the new one is: acknowledged senders resend what was
// dropped, and the oldest, which hold their acknowledgements back, go first. A batch
// is retried, after a back-off from 0.5 s doubling to 30 s, while the store
// cannot be reached, times out, or answers 5xx or 429; any other 4xx drops
// it with the store's reason in the log (points_rejected). libcurl keeps the
// connection alive between requests.
#pragma once

#include "collector/sinks/tsdb/BatchLedger.hpp"
#include "common/result.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace colmet::collector::tsdb {

struct HttpOptions {
    std::string url;                // http:// or https://
    double timeout_s = 10;          // per request, connection included
    size_t queue_bytes = 64 << 20;  // compressed bodies waiting at most
    std::string bearer_token_file;  // "Authorization: Bearer <first line>"
    std::string basic_auth_file;    // its first line, "user:password"
    std::string ca_file;            // TLS: trust these CAs instead of the system's
};

struct SenderStats {
    uint64_t points_sent = 0;      // accepted by the store (2xx)
    uint64_t points_dropped = 0;   // dropped: queue full, or still queued at stop
    uint64_t points_rejected = 0;  // refused by the store (4xx other than 429)
    uint64_t requests = 0;         // HTTP requests made
    uint64_t retries = 0;          // requests that will be made again
    uint64_t queued_bytes = 0;     // now
    uint64_t queued_points = 0;    // now
};

struct BatchOutcome {
    uint64_t batch = 0;  // the id given to submit()
    BatchFate fate = BatchFate::stored;
};

class HttpSender {
public:
    // Reads the credential files (an unreadable one is an error) and starts
    // the thread.
    static Result<std::unique_ptr<HttpSender>> start(HttpOptions options, const std::vector<std::string> &headers);
    ~HttpSender();  // stop(0) unless stopped
    HttpSender(const HttpSender &) = delete;
    HttpSender &operator=(const HttpSender &) = delete;

    // `batch`: the caller's id for it, in its outcome.
    void submit(std::string body, uint64_t points, uint64_t batch);
    // When the queue is full, drop the new batch instead of the oldest.
    void keep_oldest(bool keep);
    // What became of the batches settled since the last call: stored (2xx),
    // rejected (a 4xx other than 429), dropped (no room, or still queued at
    // stop).
    std::vector<BatchOutcome> take_outcomes();
    SenderStats stats() const;
    // Waits at most `grace` for the queue to empty, then drops what is left.
    void stop(std::chrono::milliseconds grace);

    struct State;

private:
    explicit HttpSender(std::unique_ptr<State> state);
    std::unique_ptr<State> m_state;
};

}  // namespace colmet::collector::tsdb
