// Logging: spdlog loggers named after the component ("node", "collector",
// "job"), all writing to stderr (or a file) with one format.
//
// Levels: debug = developer detail; info = lifecycle events; warn = degraded
// but continuing; error = an operation failed; critical = about to exit.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>

namespace colmet::log {

// -v count to level: 0 -> warn, 1 -> info, 2+ -> debug.
spdlog::level::level_enum level_from_verbosity(int verbosity);

// Create (or replace) the default logger for a component. When log_file is
// empty, logs go to stderr.
void setup(const std::string &component, int verbosity, const std::string &log_file = {});

// For scheduler hooks: log to log_file (appending; several processes may
// share it) and, when also_stderr, to stderr too. A log file that cannot be
// opened falls back to syslog (facility daemon), with a line saying so.
void setup_hook(const std::string &component, int verbosity, const std::string &log_file, bool also_stderr);

// Allows at most `burst` messages per `window`; the rest are counted and the
// count is reported with the next allowed message.
class RateLimiter {
public:
    RateLimiter(int burst, std::chrono::seconds window) : m_burst(burst), m_window(window) {}
    // Returns true when the caller may log now; *suppressed is the number of
    // messages dropped since the last allowed one.
    bool allow(uint64_t *suppressed);

private:
    int m_burst;
    std::chrono::seconds m_window;
    std::chrono::steady_clock::time_point m_window_start{};
    int m_in_window = 0;
    uint64_t m_suppressed = 0;
};

}  // namespace colmet::log
