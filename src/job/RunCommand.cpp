#include "job/RunCommand.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "collector/summary/JobSummary.hpp"
#include "common/clock.hpp"
#include "common/names.hpp"
#include "job/CommandLine.hpp"
#include "job/Process.hpp"
#include "job/Summary.hpp"
#include "launch/Launch.hpp"
#include "launch/Wait.hpp"
#include "spec/backend_catalog.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace colmet::job {
namespace {

using launch::exit_code_of;
using launch::terminate;
using launch::wait_for;

constexpr int k_exit_unavailable = 69;

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_setup_signal = 0;

// A signal during set-up is remembered; the command is then never started
// and everything made so far is undone.
void remember_signal(int sig) { g_setup_signal = sig; }

// SIGTERM/SIGHUP sent to colmet-job are passed on to the command, so that
// colmet-job itself stays to clean up.
void forward_signal(int sig)
{
    if (g_child > 0)
        ::kill(static_cast<pid_t>(g_child), sig);
}

std::string default_job_id()
{
    char stamp[32];
    time_t now = time(nullptr);
    tm local{};
    localtime_r(&now, &local);
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &local);
    return std::string("run-") + stamp + "-" + std::to_string(getpid());
}

std::string make_private_dir()
{
    std::string tmpl = "/tmp/colmet-run.XXXXXX";
    if (!mkdtemp(tmpl.data()))
        return {};
    return tmpl;
}

// Wait until the collector's socket exists; give up early when it exited.
bool wait_for_socket(const std::filesystem::path &p, pid_t &collector, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        if (std::filesystem::exists(p))
            return true;
        if (wait_for(collector, 0)) {
            collector = 0;
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::filesystem::exists(p);
}

// The collector creates the job's file when the sampler's first message
// arrives; give up early when the sampler exited.
// Returns false when the sampler has exited (and was reaped).
bool wait_for_file(const std::filesystem::path &file, pid_t node, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        if (std::filesystem::exists(file))
            return true;
        int status = 0;
        if (::waitpid(node, &status, WNOHANG) == node) {
            spdlog::error("colmet-node exited before sampling ({}): the command runs without monitoring",
                          WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                            : "killed by a signal");
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    spdlog::warn("no data from colmet-node after {} ms: starting the command anyway", timeout_ms);
    return true;
}

// The collector closes a job's file and writes its summary (and the
// summary's JSON, `file`) when the job ends; wait for that (bounded) before
// stopping the collector.
void wait_for_summary(const std::filesystem::path &file, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        if (collector::read_summary_file(file))
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    spdlog::warn("the job's summary did not appear in {} within {} ms", file.string(), timeout_ms);
}

// A path as one shell word (for a command line the user may paste).
std::string shell_word(const std::string &s)
{
    if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./%+,:=@-") ==
                          std::string::npos)
        return s;
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// The job's HTML report (--report): colmet-report, found next to colmet-job
// or in PATH, given the command's exit code for the report's header. Its
// outcome goes to stderr with the summary; it never changes our exit code.
void write_report(const std::filesystem::path &file, const std::string &report, int code, bool quiet)
{
    auto program = find_program("colmet-report");
    if (program.empty()) {
        spdlog::error("--report: colmet-report is not next to colmet-job or in PATH (it comes with colmet's Python "
                      "package: cmake --install, or pip install ./python); the job's data is in {}",
                      file.string());
        return;
    }
    launch::LaunchSpec spec;
    spec.argv = {program.string(), "--output=" + report, "--exit-status", std::to_string(code), "--", file.string()};
    spec.err = launch::Stdio::inherit();  // stdout stays /dev/null: it prints the files it wrote; we say it below
    auto pid = launch::launch(spec);
    if (!pid) {
        spdlog::error("--report: cannot run {}: {}", program.string(), pid.error().message());
        return;
    }
    int status = wait_for(*pid, -1).value_or(0);
    if (exit_code_of(status) != 0)
        spdlog::error("--report: colmet-report failed ({}): no report written", exit_code_of(status));
    else if (!quiet)
        std::fprintf(stderr, "  report          %s\n", report.c_str());
}

// Everything colmet-job run started, undone in reverse order whatever happens.
struct RunState {
    cgroup::CgroupPaths cgroup;
    bool have_cgroup = false;
    pid_t collector = 0;
    pid_t node = 0;
    std::string private_dir;

    ~RunState()
    {
        if (node > 0)
            terminate(node, 3000);
        if (collector > 0)
            terminate(collector, 10000);
        if (have_cgroup) {
            if (auto r = cgroup::CgroupFs::remove(cgroup); !r)
                spdlog::error("could not remove the job's cgroup: {}", r.error().message());
        }
        if (!private_dir.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(private_dir, ec);
        }
    }
};

}  // namespace

// SIGINT, SIGQUIT, SIGTERM and SIGHUP remembered (remember_signal) from
// construction; restore() (or the destructor) puts back what was there.
class SavedSignals {
public:
    SavedSignals()
    {
        struct sigaction remember {};
        remember.sa_handler = remember_signal;
        for (size_t i = 0; i < k_signals.size(); ++i)
            sigaction(k_signals[i], &remember, &m_old[i]);
    }
    ~SavedSignals() { restore(); }
    SavedSignals(const SavedSignals &) = delete;
    SavedSignals &operator=(const SavedSignals &) = delete;
    void restore()
    {
        if (m_restored)
            return;
        m_restored = true;
        for (size_t i = 0; i < k_signals.size(); ++i)
            sigaction(k_signals[i], &m_old[i], nullptr);
    }

private:
    static constexpr std::array<int, 4> k_signals{SIGINT, SIGQUIT, SIGTERM, SIGHUP};
    std::array<struct sigaction, 4> m_old{};
    bool m_restored = false;
};

// The command has ended: the sampler's final sample and job end, then the
// private collector closes the file (waited for through the summary's JSON,
// `summary`) and stops; the job's cgroup is removed.
void end_helpers(RunState &state, const std::filesystem::path &summary)
{
    if (state.node > 0)
        terminate(state.node, 3000);
    state.node = 0;
    if (state.collector > 0) {
        wait_for_summary(summary, 5000);
        terminate(state.collector, 10000);
        state.collector = 0;
    }
    if (auto r = cgroup::CgroupFs::remove(state.cgroup); !r)
        spdlog::error("could not remove the job's cgroup: {}", r.error().message());
    state.have_cgroup = false;
}

// The job's cgroup, <root>/<hierarchy>/colmet/<id> (with a perf_event
// directory when --enable-perfhw: its hierarchy mounted first when nobody
// has); 0, or colmet-job's exit status.
int create_job_cgroup(const RunOptions &o, const std::string &job_id, const std::string &relative, RunState &state)
{
    if (o.enable_perfhw) {
        // The job's cgroup gets a perf_event directory too when the
        // hierarchy is mounted: mount it first when nobody has.
        if (auto r = cgroup::ensure_perf_event_hierarchy(o.cgroup_root); !r)
            spdlog::warn("perf_event hierarchy: {} (perfhw will not count)", r.error().message());
    }
    cgroup::CgroupFs fs(o.cgroup_root);
    if (fs.resolve(relative)) {
        spdlog::critical("a job with the id '{}' is already running (its cgroup {} exists): choose another --job-id",
                         job_id, relative);
        return 64;
    }
    auto created = fs.create(relative);
    if (!created) {
        spdlog::critical("cannot create the job's cgroup {}: {}{}", relative, created.error().message(),
                         geteuid() != 0 ? " (colmet-job run must run as root to create cgroups)" : "");
        return k_exit_unavailable;
    }
    state.cgroup = *created;
    state.have_cgroup = true;
    return 0;
}

// After a command that ran: its summary (unless --quiet) and its report
// (--report), or the colmet-report line to make one.
void report_run(const RunOptions &o, const std::string &job_id, const std::filesystem::path &hdf5_dir, int status,
                double wall_seconds, int code)
{
    const auto file = job_file(hdf5_dir, job_id, JobFile::data);
    if (!o.quiet) {
        print_summary(job_id,
                      o.zeromq_uri.empty() ? job_file(hdf5_dir, job_id, JobFile::summary) : std::filesystem::path(),
                      status, wall_seconds, o.zeromq_uri);
        if (o.zeromq_uri.empty() && o.report_path.empty() && std::filesystem::exists(file))
            std::fprintf(stderr, "  report          colmet-report %s\n",
                         shell_word(file.lexically_normal().string()).c_str());
    }
    if (!o.report_path.empty() && std::filesystem::exists(file))
        write_report(file.lexically_normal(), o.report_path, code, o.quiet);
}

// The private collector (no --zeromq-uri): started in a private directory,
// listening on its socket there (`uri`); 0, or colmet-job's exit status.
int start_private_collector(const RunOptions &o, const std::filesystem::path &collector_program,
                            const std::filesystem::path &hdf5_dir, RunState &state, std::string &uri)
{
    state.private_dir = make_private_dir();
    if (state.private_dir.empty()) {
        spdlog::critical("cannot create a private directory in /tmp: {}", std::strerror(errno));
        return k_exit_unavailable;
    }
    auto socket = std::filesystem::path(state.private_dir) / "collector.sock";
    uri = "ipc://" + socket.string();
    // The private collector runs as root, like colmet-job run itself.
    // One name for every private collector, so that a job id run again
    // appends to its file (the socket path differs each time).
    std::vector<std::string> argv = {collector_program.string(), "--config", "/dev/null",  "--allow-root",
                                     "--zeromq-bind-uri",        uri,        "--hdf5-dir", hdf5_dir.string(),
                                     "--flush-interval",         "1",        "--name",     "colmet-job run"};
    if (o.verbosity > 0)
        argv.push_back(o.verbosity > 1 ? "-vv" : "-v");
    launch::LaunchSpec spec;
    spec.argv = std::move(argv);
    spec.session = launch::Session::own_session;
    spec.out = spec.err = launch::Stdio::inherit();
    auto pid = launch::launch(spec);
    if (!pid) {
        spdlog::critical("cannot start colmet-collector: {}", pid.error().message());
        return k_exit_unavailable;
    }
    state.collector = *pid;
    if (!wait_for_socket(socket, state.collector, 5000)) {
        spdlog::critical("the private colmet-collector did not start (see its messages above)");
        return k_exit_unavailable;
    }
    return 0;
}

// colmet-node's command line for the run's job.
std::vector<std::string> node_command(const RunOptions &o, const std::filesystem::path &node_program,
                                      const std::string &job_id, const std::string &relative, const std::string &uri)
{
    // The command line as metadata: control characters become spaces.
    std::string command_line;
    for (const auto &word : o.command)
        command_line += (command_line.empty() ? "" : " ") + word;
    for (char &c : command_line)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = ' ';
    std::vector<std::string> node_argv = {node_program.string(),
                                          "--config",
                                          "/dev/null",
                                          "--job-id",
                                          job_id,
                                          "--cgroup",
                                          relative,
                                          "--cgroup-root",
                                          o.cgroup_root,
                                          "--zeromq-uri",
                                          uri,
                                          "--sample-period",
                                          std::to_string(o.period_s),
                                          "--meta",
                                          "command=" + command_line.substr(0, 1000)};
    if (o.zeromq_uri.empty())  // a private collector is gone after the run: nothing to flush to
        node_argv.insert(node_argv.end(), {"--spool-dir", "none"});
    if (const char *user = getenv("SUDO_USER"); user && *user)
        node_argv.insert(node_argv.end(), {"--user", user});
    else if (const char *login = getenv("USER"); login && *login)
        node_argv.insert(node_argv.end(), {"--user", login});
    for (const auto &b : o.disabled_backends)
        node_argv.insert(node_argv.end(), {"--disable-backend", b});
    for (const auto &name : o.node_backends)
        if (const spec::BackendInfo *b = spec::backend_info(name))
            node_argv.emplace_back(b->flag);
    if (o.enable_perfhw) {
        node_argv.emplace_back(spec::k_perfhw_flag);
        if (!o.perfhw_list.empty()) {
            node_argv.push_back("--perfhw-list");
            node_argv.insert(node_argv.end(), o.perfhw_list.begin(), o.perfhw_list.end());
        }
    }
    if (o.verbosity > 0)
        node_argv.push_back(o.verbosity > 1 ? "-vv" : "-v");
    return node_argv;
}

// The command, started in its own process that waits, before exec, until
// release(): once it is in the job's cgroup. It runs as `as_user` when
// given, with what colmet-job was given (descriptors, ignored signals,
// terminal).
Result<launch::Child> start_command(const RunOptions &o, const std::optional<launch::Credentials> &as_user)
{
    launch::LaunchSpec spec;
    spec.argv = o.command;
    spec.search_path = true;
    spec.in = spec.out = spec.err = launch::Stdio::inherit();
    spec.keep_other_fds = true;
    spec.signals = launch::Signals::inherit;
    spec.gated = true;
    if (as_user) {
        spec.user = &*as_user;
        spec.env = as_user->env;
    }
    return launch::start(spec);
}

int run_command(const RunOptions &o)
{
    if (o.command.empty()) {
        spdlog::critical("no command given: colmet-job run [options] -- CMD ARGS...");
        return 64;
    }
    auto node_program = find_program("colmet-node");
    auto collector_program = find_program("colmet-collector");
    if (node_program.empty() || (o.zeromq_uri.empty() && collector_program.empty())) {
        spdlog::critical("cannot find colmet-node or colmet-collector next to colmet-job or in PATH");
        return k_exit_unavailable;
    }

    std::string job_id = o.job_id.empty() ? default_job_id() : o.job_id;
    if (!valid_identifier(job_id)) {
        spdlog::critical("--job-id '{}': use 1 to 128 printable ASCII characters without '/'", job_id);
        return 64;
    }
    // Under sudo the command runs as the user who ran sudo; colmet's own
    // processes (cgroup, sampler, collector) stay root's.
    std::optional<launch::Credentials> as_user;
    if (!o.as_root) {
        auto invoker = sudo_invoker();
        if (!invoker) {
            spdlog::critical("{}", invoker.error().message());
            return 64;
        }
        as_user = std::move(*invoker);
    }
    if (as_user) {
        spdlog::info("the command runs as {} (uid {}), who ran sudo; --as-root runs it as root", as_user->user,
                     as_user->uid);
    }
    SavedSignals saved;  // until the end: set-up signals are remembered (g_setup_signal)
    RunState state;

    const std::string relative = "/colmet/" + sanitize_name(job_id);
    if (int rc = create_job_cgroup(o, job_id, relative, state); rc != 0)
        return rc;

    std::error_code ec;
    std::filesystem::path hdf5_dir = std::filesystem::absolute(o.hdf5_dir, ec);
    std::string uri = o.zeromq_uri;
    if (uri.empty())
        if (int rc = start_private_collector(o, collector_program, hdf5_dir, state, uri); rc != 0)
            return rc;

    launch::LaunchSpec node_spec;
    node_spec.argv = node_command(o, node_program, job_id, relative, uri);
    node_spec.session = launch::Session::own_session;
    node_spec.term_blocked = true;
    node_spec.out = node_spec.err = launch::Stdio::inherit();
    auto node_pid = launch::launch(node_spec);
    if (!node_pid) {
        spdlog::critical("cannot start colmet-node: {}", node_pid.error().message());
        return k_exit_unavailable;
    }
    state.node = *node_pid;

    // The command: started, moved into the job's cgroup by us, then
    // released to exec, so that it never runs outside the cgroup.
    int64_t started = monotonic_ns();
    auto command = start_command(o, as_user);
    if (!command) {
        spdlog::critical("cannot start the command: {}", command.error().message());
        return 70;
    }
    const pid_t child = command->pid();
    g_child = child;
    // While the command runs, Ctrl-C belongs to it: colmet-job ignores
    // SIGINT/SIGQUIT (as system() does) and passes SIGTERM/SIGHUP on.
    struct sigaction ignore {
    }, forward{};
    ignore.sa_handler = SIG_IGN;
    forward.sa_handler = forward_signal;
    sigaction(SIGINT, &ignore, nullptr);
    sigaction(SIGQUIT, &ignore, nullptr);
    sigaction(SIGTERM, &forward, nullptr);
    sigaction(SIGHUP, &forward, nullptr);

    // With the private collector, wait (bounded) until the sampler's first
    // message is stored, so that even a very short command is sampled from
    // its start.
    auto file = job_file(hdf5_dir, job_id, JobFile::data);
    if (state.collector > 0 && !wait_for_file(file, state.node, 3000))
        state.node = 0;

    char go = 'g';
    if (g_setup_signal) {
        spdlog::error("interrupted by signal {} before the command started", static_cast<int>(g_setup_signal));
        go = 'x';
    } else if (auto r = cgroup::CgroupFs::attach(state.cgroup, child); !r) {
        spdlog::error("cannot move the command into its cgroup: {}", r.error().message());
        go = 'x';
    }
    if (auto ran = command->release(go == 'g'); !ran)
        spdlog::error("cannot run {}{}: {}", o.command.front(), as_user ? " as " + as_user->user : std::string(),
                      ran.error().message());

    int status = wait_for(child, -1).value_or(0);
    int64_t ended = monotonic_ns();
    g_child = 0;
    int code = go == 'g' ? exit_code_of(status) : (g_setup_signal ? 128 + g_setup_signal : 70);

    end_helpers(state, job_file(hdf5_dir, job_id, JobFile::summary));
    saved.restore();

    if (go == 'g')
        report_run(o, job_id, hdf5_dir, status, static_cast<double>(ended - started) / 1e9, code);
    return code;
}

CLI::App *add_run_command(CLI::App &app, RunOptions &o)
{
    auto *cmd =
        app.add_subcommand("run", "Run a command in a new cgroup, sample it, store its HDF5 file and print a summary");
    auto *dir_opt = cmd->add_option("--hdf5-dir", o.hdf5_dir, "Directory for the job's HDF5 file (private collector)")
                        ->capture_default_str();
    cmd->add_option("--zeromq-uri", o.zeromq_uri,
                    "Send to this running collector instead of starting a private one (several, "
                    "comma-separated: the job's one by a hash of the job id)")
        ->check(collector_list_check())
        ->excludes(dir_opt);
    cmd->add_option("--job-id", o.job_id, "Job id (default: run-<date>-<pid>)");
    cmd->add_option("-s,--sample-period", o.period_s, "Seconds between samples (0.1 to 3600)")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    cmd->add_option("--cgroup-root", o.cgroup_root, "Where the cgroup file systems are mounted")->capture_default_str();
    cmd->add_option("--disable-backend", o.disabled_backends, "Do not run this backend (repeatable)")
        ->check([](const std::string &name) {
            const spec::BackendInfo *b = spec::backend_info(name);
            return b && (b->kind == spec::BackendKind::job || b->kind == spec::BackendKind::derived)
                       ? std::string()
                       : "unknown backend '" + name + "'";
        });
    cmd->add_flag(std::string(spec::k_perfhw_flag), o.enable_perfhw,
                  "Also count perf events (mounts the perf_event cgroup hierarchy if needed)");
    // One value per occurrence (comma-separated), so that the list cannot
    // swallow the command after it.
    cmd->add_option("--perfhw-list", o.perfhw_list,
                    "Events for --enable-perfhw, comma-separated (default: colmet-node's)")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    for (const auto &b : spec::k_backend_catalog) {  // --enable-RAPL, --enable-temperature, ...
        if (!spec::enabled_by_flag(b.kind))
            continue;
        cmd->add_flag_callback(
            std::string(b.flag),
            [&o, name = std::string(b.name)] {
                auto &list = o.node_backends;
                if (std::find(list.begin(), list.end(), name) == list.end())
                    list.push_back(name);
            },
            "Also run colmet-node's node-level backend " + std::string(b.name) + " (" + std::string(b.description) +
                ")");
    }
    cmd->add_flag("--as-root", o.as_root,
                  "Under sudo, run the command as root (by default it runs as the user who ran sudo)");
    cmd->add_flag("-q,--quiet", o.quiet, "Do not print the summary");
    cmd->add_option("--report", o.report_path, "Also write the job's HTML report to this file (runs colmet-report)")
        ->excludes("--zeromq-uri");
    add_verbose_flag(*cmd, o.verbosity);
    cmd->add_option("command", o.command, "The command and its arguments, after --");
    return cmd;
}

}  // namespace colmet::job
