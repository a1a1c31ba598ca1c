#include "collector/sinks/tsdb/HttpSender.hpp"

#include "common/file_io.hpp"
#include "common/log.hpp"
#include "common/text.hpp"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <utility>

namespace colmet::collector::tsdb {

namespace {

constexpr std::chrono::milliseconds k_first_backoff{500};
constexpr std::chrono::milliseconds k_max_backoff{30000};
constexpr size_t k_max_reason = 300;  // bytes of a store's error answer kept for the log

struct Batch {
    std::string body;
    uint64_t points = 0;
    uint64_t id = 0;
};

enum class Outcome { sent, retry, rejected };

size_t keep_answer(char *data, size_t size, size_t count, void *user)
{
    auto *answer = static_cast<std::string *>(user);
    const size_t n = size * count;
    if (answer->size() < k_max_reason)
        answer->append(data, std::min(n, k_max_reason - answer->size()));
    return n;
}

Result<std::string> first_line(const std::string &path, const char *what)
{
    auto text = read_file(path);
    if (!text)
        return text.error().with_context(what);
    std::string line(text::trim(std::string_view(*text).substr(0, text->find('\n'))));
    if (line.empty())
        return Error::invalid(std::string(what) + " " + path + " is empty");
    return line;
}

}  // namespace

struct HttpSender::State {
    HttpOptions options;
    std::string authorization;  // the bearer header, or empty
    std::string basic_auth;     // user:password, or empty

    mutable std::mutex mutex;
    std::condition_variable wake;
    std::deque<Batch> queue;
    std::vector<BatchOutcome> outcomes;  // not yet taken
    bool keep_oldest = false;            // when full, drop the new batch
    SenderStats stats;
    bool stopping = false;
    std::chrono::steady_clock::time_point give_up_at;
    std::thread thread;
    log::RateLimiter log_limit{5, std::chrono::seconds(60)};

    CURL *curl = nullptr;
    curl_slist *header_list = nullptr;

    void run();
    Outcome post(const Batch &batch);
    void log_problem(const std::string &what);
};

void HttpSender::State::log_problem(const std::string &what)
{
    uint64_t suppressed = 0;
    if (log_limit.allow(&suppressed))
        spdlog::warn("tsdb: {}{}", what,
                     suppressed ? " (" + std::to_string(suppressed) + " similar messages suppressed)" : "");
}

Outcome HttpSender::State::post(const Batch &batch)
{
    std::string answer;
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, batch.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(batch.body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    const CURLcode rc = curl_easy_perform(curl);
    {
        std::lock_guard lock(mutex);
        ++stats.requests;
    }
    if (rc != CURLE_OK) {
        log_problem(options.url + ": " + curl_easy_strerror(rc) + "; will retry");
        return Outcome::retry;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return Outcome::sent;
    for (char &c : answer)
        if (c == '\n' || c == '\r')
            c = ' ';
    if (status >= 500 || status == 429) {
        log_problem(options.url + ": HTTP " + std::to_string(status) + " " + answer + "; will retry");
        return Outcome::retry;
    }
    log_problem(options.url + ": HTTP " + std::to_string(status) + " " + answer + "; " + std::to_string(batch.points) +
                " points dropped");
    return Outcome::rejected;
}

void HttpSender::State::run()
{
    std::chrono::milliseconds backoff{0};
    std::unique_lock lock(mutex);
    while (true) {
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty() || (stopping && std::chrono::steady_clock::now() >= give_up_at))
            break;
        if (backoff.count() > 0) {
            // Wait before the retry. A stop ends the wait; while stopping the
            // wait is at most the first back-off (the store may be back) and
            // never passes the deadline.
            if (!stopping)
                wake.wait_for(lock, backoff, [&] { return stopping; });
            if (stopping) {
                const auto until = std::min(std::chrono::steady_clock::now() + k_first_backoff, give_up_at);
                wake.wait_until(lock, until, [] { return false; });
                if (std::chrono::steady_clock::now() >= give_up_at)
                    break;
            }
            if (queue.empty())  // submit() dropped it meanwhile to make room
                continue;
        }
        Batch batch = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        const Outcome outcome = post(batch);
        lock.lock();
        switch (outcome) {
        case Outcome::sent:
            stats.points_sent += batch.points;
            outcomes.push_back({batch.id, BatchFate::stored});
            backoff = std::chrono::milliseconds(0);
            break;
        case Outcome::rejected:
            stats.points_rejected += batch.points;
            outcomes.push_back({batch.id, BatchFate::rejected});
            backoff = std::chrono::milliseconds(0);
            break;
        case Outcome::retry:
            ++stats.retries;
            queue.push_front(std::move(batch));  // first again, and still counted as queued
            backoff = std::clamp(backoff * 2, k_first_backoff, k_max_backoff);
            continue;
        }
        stats.queued_bytes -= batch.body.size();
        stats.queued_points -= batch.points;
    }
    for (const Batch &b : queue) {
        stats.points_dropped += b.points;
        outcomes.push_back({b.id, BatchFate::dropped});
    }
    queue.clear();
    stats.queued_bytes = 0;
    stats.queued_points = 0;
}

Result<std::unique_ptr<HttpSender>> HttpSender::start(HttpOptions options, const std::vector<std::string> &headers)
{
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

    auto state = std::make_unique<State>();
    if (!options.bearer_token_file.empty()) {
        auto token = first_line(options.bearer_token_file, "bearer token file");
        if (!token)
            return token.error();
        state->authorization = "Authorization: Bearer " + *token;
    }
    if (!options.basic_auth_file.empty()) {
        auto pair = first_line(options.basic_auth_file, "basic auth file");
        if (!pair)
            return pair.error();
        if (pair->find(':') == std::string::npos)
            return Error::invalid("basic auth file " + options.basic_auth_file + ": expected user:password");
        state->basic_auth = *pair;
    }
    state->curl = curl_easy_init();
    if (!state->curl)
        return Error(Errc::internal, "curl_easy_init failed");
    for (const auto &h : headers)
        state->header_list = curl_slist_append(state->header_list, h.c_str());
    if (!state->authorization.empty())
        state->header_list = curl_slist_append(state->header_list, state->authorization.c_str());
    CURL *c = state->curl;
    curl_easy_setopt(c, CURLOPT_URL, options.url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, state->header_list);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_s * 1000));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(options.timeout_s, 5.0) * 1000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "colmet-collector/" COLMET_VERSION);
    if (!state->basic_auth.empty()) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERPWD, state->basic_auth.c_str());
    }
    if (!options.ca_file.empty())
        curl_easy_setopt(c, CURLOPT_CAINFO, options.ca_file.c_str());
    state->options = std::move(options);
    // The thread takes no signal: the collector waits for its signals with
    // signalfd in the main thread, and a signal delivered here would kill it.
    State *raw = state.get();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    state->thread = std::thread([raw] { raw->run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return std::unique_ptr<HttpSender>(new HttpSender(std::move(state)));
}

HttpSender::HttpSender(std::unique_ptr<State> state) : m_state(std::move(state)) {}

HttpSender::~HttpSender()
{
    stop(std::chrono::milliseconds(0));
    curl_slist_free_all(m_state->header_list);
    curl_easy_cleanup(m_state->curl);
}

void HttpSender::submit(std::string body, uint64_t points, uint64_t batch)
{
    std::lock_guard lock(m_state->mutex);
    SenderStats &s = m_state->stats;
    if (points == 0) {
        m_state->outcomes.push_back({batch, BatchFate::stored});  // nothing to send
        return;
    }
    if (m_state->stopping) {
        s.points_dropped += points;
        m_state->outcomes.push_back({batch, BatchFate::dropped});
        return;
    }
    // Make room: the oldest batches go first (never the one being posted,
    // which is out of the queue), unless they are to be kept.
    while (!m_state->keep_oldest && !m_state->queue.empty() &&
           s.queued_bytes + body.size() > m_state->options.queue_bytes) {
        const Batch &old = m_state->queue.front();
        s.points_dropped += old.points;
        m_state->outcomes.push_back({old.id, BatchFate::dropped});
        s.queued_bytes -= old.body.size();
        s.queued_points -= old.points;
        m_state->queue.pop_front();
    }
    if (s.queued_bytes + body.size() > m_state->options.queue_bytes) {
        s.points_dropped += points;  // larger than the whole queue, or the oldest are kept
        m_state->outcomes.push_back({batch, BatchFate::dropped});
        return;
    }
    s.queued_bytes += body.size();
    s.queued_points += points;
    m_state->queue.push_back(Batch{std::move(body), points, batch});
    m_state->wake.notify_one();
}

void HttpSender::keep_oldest(bool keep)
{
    std::lock_guard lock(m_state->mutex);
    m_state->keep_oldest = keep;
}

std::vector<BatchOutcome> HttpSender::take_outcomes()
{
    std::lock_guard lock(m_state->mutex);
    return std::exchange(m_state->outcomes, {});
}

SenderStats HttpSender::stats() const
{
    std::lock_guard lock(m_state->mutex);
    return m_state->stats;
}

void HttpSender::stop(std::chrono::milliseconds grace)
{
    {
        std::lock_guard lock(m_state->mutex);
        if (!m_state->stopping) {
            m_state->stopping = true;
            m_state->give_up_at = std::chrono::steady_clock::now() + grace;
        }
    }
    m_state->wake.notify_all();
    if (m_state->thread.joinable())
        m_state->thread.join();
}

}  // namespace colmet::collector::tsdb
