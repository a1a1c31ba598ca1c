#include "Spawn.hpp"

#include "launch/Launch.hpp"
#include "launch/Wait.hpp"

#include <chrono>
#include <csignal>
#include <sys/wait.h>

namespace colmet::spank {

namespace {

// What every helper gets inside a Slurm daemon: /dev/null for its standard
// descriptors (stderr optionally kept), nothing else open, default signals
// (slurmstepd blocks some that the helper and its sampler must receive),
// and a fixed small environment.
Result<launch::LaunchSpec> helper_spec(const std::vector<std::string> &argv)
{
    if (argv.empty() || argv.front().empty() || argv.front().front() != '/')
        return Error::invalid("helper path must be absolute");
    launch::LaunchSpec spec;
    spec.argv = argv;
    spec.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    return spec;
}

}  // namespace

Result<SpawnResult> run_helper(const std::vector<std::string> &argv, double timeout_s, bool keep_stderr)
{
    auto spec = helper_spec(argv);
    if (!spec)
        return spec.error();
    if (keep_stderr)
        spec->err = launch::Stdio::inherit();
    spec->session = launch::Session::own_group;
    const auto start = std::chrono::steady_clock::now();
    auto pid = launch::launch(*spec);
    if (!pid)
        return Error::system("run", argv.front(), pid.error().sys_errno());

    SpawnResult out;
    const launch::Exit e = launch::wait_exit(*pid, static_cast<int>(timeout_s * 1000));
    out.status_unknown = e.status_unknown;
    if (e.timed_out) {
        ::kill(*pid, SIGKILL);
        if (!e.status_unknown)
            (void)launch::wait_exit(*pid, -1);
        out.timed_out = true;
    } else if (e.status_unknown) {
        out.exit_status = 0;
    } else {
        out.exit_status = WIFEXITED(e.status) ? WEXITSTATUS(e.status) : -1;
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
}

Result<pid_t> spawn_detached(const std::vector<std::string> &argv)
{
    auto spec = helper_spec(argv);
    if (!spec)
        return spec.error();
    spec->detach = true;
    spec->session = launch::Session::own_session;
    return launch::launch(*spec);
}

}  // namespace colmet::spank
