// colmet-job stop: the hooks' end of a job: the sampler's final sample, the
// counters reset, the cleanup of what start made.
#pragma once

#include "job/StartCommand.hpp"

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

struct StopOptions {
    std::string job_id;
    bool hook = false;
    std::string run_dir = k_default_run_dir;
    double timeout_s = 5;  // SIGTERM, then SIGKILL after this long
    std::string log_file = k_default_log_file;
    std::string config = k_default_config;
    std::string spool_dir;  // as StartOptions
    int verbosity = 0;
};

int stop_command(const StopOptions &options);

// Declares `stop` and its options on `app`, filled into `options`.
CLI::App *add_stop_command(CLI::App &app, StopOptions &options);

}  // namespace colmet::job
