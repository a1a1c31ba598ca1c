// colmet-job run: the one-machine form of the whole pipeline.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace colmet::job {

struct RunOptions {
    std::string hdf5_dir = ".";  // where the job's file goes (private collector)
    std::string zeromq_uri;      // empty: start a private collector
    std::string job_id;          // empty: run-<date>-<pid>
    double period_s = 1;
    std::string cgroup_root = "/sys/fs/cgroup";
    std::vector<std::string> disabled_backends;
    bool enable_perfhw = false;
    std::vector<std::string> perfhw_list;    // empty: colmet-node's default
    std::vector<std::string> node_backends;  // node-level backends to enable (rapl, temperature, ...)
    bool quiet = false;                      // no summary
    std::string report_path;                 // non-empty: colmet-report writes the job's HTML report here
    bool as_root = false;                    // under sudo, run the command as root, not as sudo's user
    int verbosity = 0;
    std::vector<std::string> command;
};

// Returns the command's exit status (128 + signal when it was killed), or
// 69/70 when colmet itself could not run it.
int run_command(const RunOptions &options);

// Declares `run` and its options on `app`, filled into `options`.
CLI::App *add_run_command(CLI::App &app, RunOptions &options);

}  // namespace colmet::job
