// Wall-clock and monotonic time in nanoseconds.
#pragma once

#include <cstdint>

namespace colmet {

int64_t realtime_ns();
int64_t monotonic_ns();

// The first multiple of period_ns strictly after now_ns: sampling instants
// are aligned to the period on the wall clock, so the samples of different
// nodes line up.
int64_t next_aligned(int64_t now_ns, int64_t period_ns);

}  // namespace colmet
