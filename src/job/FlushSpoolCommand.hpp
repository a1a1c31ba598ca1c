// colmet-job flush-spool: send the node spool's data to the collectors and
// delete each file once all of it is acknowledged.
#pragma once

#include "job/StartCommand.hpp"

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

struct FlushSpoolOptions {
    std::string spool_dir;  // as StartOptions
    std::string config = k_default_config;
    double wait_s = 30;
    double max_age_s = 86400;
    bool hook = false;
    std::string log_file;  // empty: stderr (hook mode: k_default_log_file)
    int verbosity = 0;
};

// Exit codes of flush-spool outside hook mode.
inline constexpr int k_exit_spool_kept = 75;  // some messages wait for the next flush (EX_TEMPFAIL)

int flush_spool_command(const FlushSpoolOptions &options);

// Declares `flush-spool` and its options on `app`, filled into `options`.
CLI::App *add_flush_spool_command(CLI::App &app, FlushSpoolOptions &options);

}  // namespace colmet::job
