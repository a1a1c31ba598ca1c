// The sampling periods colmet accepts, everywhere one is given or checked:
// colmet-node's --sample-period, colmet-ctl's changes, a job spec's period=,
// and the collector's admission (what a sampler can produce per second).
#pragma once

namespace colmet {

inline constexpr double k_min_period_s = 0.1;  // also the least time between two on-demand samples
inline constexpr double k_max_period_s = 3600;

}  // namespace colmet
