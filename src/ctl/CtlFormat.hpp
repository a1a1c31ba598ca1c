// What colmet-ctl prints and the exit status it returns, apart from I/O so
// that tests can check them.
#pragma once

#include "ctl/CtlClient.hpp"
#include "node/control/ControlProtocol.hpp"

#include <string>

namespace colmet::ctl {

inline constexpr int k_exit_accepted = 0;
inline constexpr int k_exit_rejected = 1;
inline constexpr int k_exit_usage = 64;
inline constexpr int k_exit_unavailable = 69;
inline constexpr int k_exit_permission = 77;

// The settings in force, one "key value" line each:
//   sample_period  0.5 s
//   perfhw         counting: task_clock,page_faults
//   samples_sent   12
//   dropped        0
//   collector      tcp://127.0.0.1:5556
std::string format_state(const node::control::ControlState &state);

// First line of the output: "job 42: accepted (sample_period)",
// "job 42: accepted (no change)" or "job 42: rejected (invalid): <reason>".
std::string format_verdict(const std::string &job_id, const node::control::ControlAnswer &answer);

int exit_status(const Exchange &exchange);

}  // namespace colmet::ctl
