#include "common/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

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
        logger = std::make_shared<spdlog::logger>(component,
                                                  std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v");
    logger->set_level(level_from_verbosity(verbosity));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
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

} // namespace colmet::log
