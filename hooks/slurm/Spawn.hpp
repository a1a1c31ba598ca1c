// Run a helper from inside a Slurm daemon: no shell, no inherited file
// descriptors (stdin/stdout/stderr are /dev/null, everything else is closed,
// so a detached sampler can never hold srun's I/O open), a fixed small
// environment, and a hard time limit after which the helper is killed.
#pragma once

#include "common/result.hpp"

#include <string>
#include <vector>

namespace colmet::spank {

struct SpawnResult {
    int exit_status = -1;  // exit code, or -1 when killed / signalled
    bool timed_out = false;
    bool status_unknown = false;  // reaped by the host program: finished, status not known
    double seconds = 0;           // wall time the call took
};

// argv[0] must be an absolute path. Waits at most timeout_s seconds, then
// SIGKILLs the helper and reaps it. Only fails when the helper could not be
// started at all. keep_stderr: the helper writes to the caller's standard
// error (srun's: the user's terminal) instead of /dev/null.
Result<SpawnResult> run_helper(const std::vector<std::string> &argv, double timeout_s, bool keep_stderr = false);

// Start a helper detached and do not wait for it: it runs in its own session,
// re-parented to init (or the nearest subreaper) at once, so that Slurm's
// process tracking does not count it as part of a step that is being torn
// down (proctrack/linuxproc kills every descendant of slurmstepd when the job
// ends). Same descriptors and environment as run_helper. Returns the
// helper's pid.
Result<pid_t> spawn_detached(const std::vector<std::string> &argv);

}  // namespace colmet::spank
