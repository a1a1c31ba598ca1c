// What colmet-job's subcommands share on their command lines: each
// subcommand declares its own options in its own file (add_<name>_command),
// with these checks and flags.
#pragma once

#include <CLI/CLI.hpp>

namespace colmet::job {

// --zeromq-uri: one collector or several (common/collectors.hpp).
const CLI::Validator &collector_list_check();

// -v,--verbose on a subcommand, counted into `verbosity` (the top-level -v
// is added to it by job_main).
void add_verbose_flag(CLI::App &command, int &verbosity);

}  // namespace colmet::job
