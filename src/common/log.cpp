#include "common/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>

#include <syslog.h>

namespace colmet::log {

spdlog::level::level_enum level_from_verbosity(int verbosity)
{
    if (verbosity <= 0)
        return spdlog::level::warn;
    if (verbosity == 1)
        return spdlog::level::info;
    return spdlog::level::debug;
}

void setup(const std::string &component, int verbosity, const std::string &log_file)
{
    std::shared_ptr<spdlog::logger> logger;
    if (log_file.empty())
        logger = std::make_shared<spdlog::logger>(component, std::make_shared<spdlog::sinks::stderr_sink_mt>());
    else
        logger =
            std::make_shared<spdlog::logger>(component, std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v");
    logger->set_level(level_from_verbosity(verbosity));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
}

void setup_hook(const std::string &component, int verbosity, const std::string &log_file, bool also_stderr)
{
    std::vector<spdlog::sink_ptr> sinks;
    std::string fallback_reason;
    try {
        sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file));
    } catch (const spdlog::spdlog_ex &e) {
        fallback_reason = e.what();
        sinks.push_back(
            std::make_shared<spdlog::sinks::syslog_sink_mt>("colmet-" + component, LOG_PID, LOG_DAEMON, false));
    }
    if (also_stderr)
        sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    auto logger = std::make_shared<spdlog::logger>(component, sinks.begin(), sinks.end());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v");
    logger->set_level(level_from_verbosity(verbosity));
    logger->flush_on(spdlog::level::debug);
    spdlog::set_default_logger(logger);
    if (!fallback_reason.empty())
        spdlog::warn("cannot log to {} ({}); logging to syslog", log_file, fallback_reason);
}

bool RateLimiter::allow(uint64_t *suppressed)
{
    auto now = std::chrono::steady_clock::now();
    if (now - m_window_start >= m_window) {
        m_window_start = now;
        m_in_window = 0;
    }
    if (m_in_window < m_burst) {
        ++m_in_window;
        *suppressed = m_suppressed;
        m_suppressed = 0;
        return true;
    }
    ++m_suppressed;
    return false;
}

}  // namespace colmet::log
