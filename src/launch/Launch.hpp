// The one place where colmet starts another program: colmet-job's sampler,
// private collector, report and the user's command, the sampler's spool
// flush, the collector's on-job-end command and the SPANK plugin's helpers.
// What a child gets (descriptors, signals, session, cgroup, credentials,
// environment) is set here, from a LaunchSpec, between fork() and exec()
// with async-signal-safe calls only: everything is prepared before fork(),
// so the launcher may run in a multi-threaded program (slurmstepd, the
// collector). A child that cannot get what its spec asks for does not run
// the program: the step that failed and its errno come back to the parent
// through a close-on-exec pipe, as an error of launch() or release().
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "launch/Credentials.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace colmet::launch {

// One of the child's standard descriptors.
struct Stdio {
    enum class Kind { null, inherit, fd, append };
    Kind kind = Kind::null;
    int fd = -1;       // Kind::fd: duplicated onto the standard descriptor (must be 3 or more)
    std::string path;  // Kind::append: opened for appending, created 0600

    static Stdio null() { return {}; }
    static Stdio inherit() { return {Kind::inherit, -1, {}}; }
    static Stdio from_fd(int fd) { return {Kind::fd, fd, {}}; }
    // An empty path inherits.
    static Stdio append_to(std::string path)
    {
        return path.empty() ? inherit() : Stdio{Kind::append, -1, std::move(path)};
    }
};

enum class Session {
    same,         // the launcher's process group and session
    own_group,    // a process group of its own (a signal to the launcher's group misses it)
    own_session,  // setsid(): no controlling terminal, out of reach of Ctrl-C
};

enum class Signals {
    reset,    // every disposition back to its default, nothing blocked
    inherit,  // the launcher's ignored signals and mask, as a shell passes them (a user's command)
};

struct LaunchSpec {
    std::vector<std::string> argv;  // argv[0]: a path, or with search_path a name looked up in PATH
    bool search_path = false;
    std::optional<std::vector<std::string>> env;  // "NAME=value"; nullopt: the launcher's environment
    Stdio in, out, err;                           // /dev/null unless said otherwise
    // Descriptors 3 and up: closed, unless kept (a user's command keeps
    // what its caller gave it; close-on-exec ones go anyway).
    bool keep_other_fds = false;
    Session session = Session::same;
    Signals signals = Signals::reset;
    // SIGTERM and SIGINT blocked from before fork() until after exec (a
    // colmet program that reads them from a signalfd sees one sent during
    // its start-up). With Signals::reset only.
    bool term_blocked = false;
    // Double fork: the program is not the launcher's child but init's (or
    // the nearest subreaper's), so that nobody waits for it and a
    // scheduler's process tracking does not count it. Not with `gated`.
    bool detach = false;
    // "cgroup.procs" files the child writes itself into before exec (out of
    // the job's cgroups); a write that fails is ignored (not root).
    std::vector<std::string> join_cgroups;
    std::string workdir;  // empty: unchanged
    int umask = -1;       // -1: unchanged
    // Become this user before exec (the launcher must be root).
    const Credentials *user = nullptr;
    // The child waits before exec until the parent calls release() (the
    // parent moves it into a cgroup first, so that it never runs outside).
    bool gated = false;
};

// SIGTERM and SIGINT, the signals colmet's programs read from a signalfd.
sigset_t term_signals();

// A started child (gated: waiting for release()).
class Child {
public:
    Child() = default;
    Child(pid_t pid, UniqueFd gate, UniqueFd report, std::string program);

    // The program's pid (detached: not the launcher's child).
    pid_t pid() const { return m_pid; }

    // Gated: let the child exec (go) or exit with status 70 (!go). Then,
    // and for a child that is not gated: wait until it has exec'ed, and
    // return the step that failed when it could not.
    Result<void> release(bool go = true);

private:
    pid_t m_pid = -1;
    UniqueFd m_gate;
    UniqueFd m_report;
    std::string m_program;
};

// Fork and prepare the child; it runs the program at once unless gated.
// Errors: an invalid spec, fork. A detached child is started whole: this
// returns once the program runs, or with the step that failed.
Result<Child> start(const LaunchSpec &spec);

// start() and release(): the child's pid once it runs the program. A child
// that failed before exec has exited (with 127 when the program is not
// there, 126 when exec failed otherwise, 70 for an earlier step); it is
// reaped here unless detached.
Result<pid_t> launch(const LaunchSpec &spec);

}  // namespace colmet::launch
