#include "collector/sinks/stdout/StdoutSink.hpp"

#include <cinttypes>
#include <ctime>

namespace colmet::collector {

void StdoutSink::consume(const wire::Message &msg, const Delivery &delivery) noexcept
{
    time_t secs = static_cast<time_t>(msg.time_ns / 1'000'000'000);
    tm utc{};
    gmtime_r(&secs, &utc);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &utc);
    std::fprintf(m_out, "%s.%03dZ job=%s host=%s %s seq=%" PRIu64, when,
                 static_cast<int>((msg.time_ns / 1'000'000) % 1000), msg.job_id.c_str(), msg.host.c_str(),
                 wire::to_string(msg.kind), msg.seq);
    if (delivery.lost)
        std::fprintf(m_out, " lost=%" PRIu64, delivery.lost);
    std::fputc('\n', m_out);
    for (const auto &[key, value] : msg.meta)
        std::fprintf(m_out, "  meta %s = %s\n", key.c_str(), value.c_str());
    for (const auto &blk : msg.backends) {
        if (!blk.status.empty())
            std::fprintf(m_out, "  %s: %s\n", blk.name.c_str(), blk.status.c_str());
        for (size_t i = 0; i < blk.metrics.size(); ++i) {
            const auto &d = blk.metrics[i];
            if (wire::is_missing(blk.values[i]))
                std::fprintf(m_out, "  %s.%s = - %s (%s)\n", blk.name.c_str(), d.name.c_str(), d.unit.c_str(),
                             wire::to_string(d.kind));
            else
                std::fprintf(m_out, "  %s.%s = %.17g %s (%s)\n", blk.name.c_str(), d.name.c_str(), blk.values[i],
                             d.unit.c_str(), wire::to_string(d.kind));
        }
    }
}

void StdoutSink::tick(int64_t) noexcept { std::fflush(m_out); }
void StdoutSink::close_all() noexcept { std::fflush(m_out); }

}  // namespace colmet::collector
