#include "common/clock.hpp"

#include <ctime>

namespace colmet {

static int64_t read_clock(clockid_t id)
{
    timespec ts{};
    clock_gettime(id, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t realtime_ns() { return read_clock(CLOCK_REALTIME); }
int64_t monotonic_ns() { return read_clock(CLOCK_MONOTONIC); }

int64_t next_aligned(int64_t now_ns, int64_t period_ns)
{
    if (period_ns <= 0)
        return now_ns;
    return (now_ns / period_ns + 1) * period_ns;
}

}  // namespace colmet
