// colmet-job status: the samplers colmet-job start recorded in the run
// directory, one line each.
#pragma once

#include "job/StartCommand.hpp"

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

struct StatusOptions {
    std::string run_dir = k_default_run_dir;
};

int status_command(const StatusOptions &options);

// Declares `status` and its options on `app`, filled into `options`.
CLI::App *add_status_command(CLI::App &app, StatusOptions &options);

}  // namespace colmet::job
