#include "job/RunCommand.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "collector/summary/JobSummary.hpp"
#include "common/clock.hpp"
#include "common/names.hpp"
#include "job/Process.hpp"
#include "job/Summary.hpp"
#include "spec/backend_catalog.hpp"

#include <spdlog/spdlog.h>

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
    SpawnOptions so;
    so.stdout_path = "/dev/null";  // it prints the files it wrote; we say it below
    auto pid =
        spawn({program.string(), "--output=" + report, "--exit-status", std::to_string(code), "--", file.string()}, so);
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
    std::optional<Credentials> as_user;
    if (!o.as_root) {
        auto invoker = sudo_invoker();
        if (!invoker) {
            spdlog::critical("{}", invoker.error().message());
            return 64;
        }
        as_user = std::move(*invoker);
    }
    std::vector<char *> user_env;
    if (as_user) {
        user_env = exec_argv(as_user->env);
        spdlog::info("the command runs as {} (uid {}), who ran sudo; --as-root runs it as root", as_user->user,
                     as_user->uid);
    }
    struct sigaction remember {
    }, old_int{}, old_quit{}, old_term{}, old_hup{};
    remember.sa_handler = remember_signal;
    sigaction(SIGINT, &remember, &old_int);
    sigaction(SIGQUIT, &remember, &old_quit);
    sigaction(SIGTERM, &remember, &old_term);
    sigaction(SIGHUP, &remember, &old_hup);
    RunState state;

    if (o.enable_perfhw) {
        // The job's cgroup gets a perf_event directory too when the
        // hierarchy is mounted: mount it first when nobody has.
        if (auto r = cgroup::ensure_perf_event_hierarchy(o.cgroup_root); !r)
            spdlog::warn("perf_event hierarchy: {} (perfhw will not count)", r.error().message());
    }
    cgroup::CgroupFs fs(o.cgroup_root);
    std::string relative = "/colmet/" + sanitize_name(job_id);
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

    std::error_code ec;
    std::filesystem::path hdf5_dir = std::filesystem::absolute(o.hdf5_dir, ec);
    std::string uri = o.zeromq_uri;
    if (uri.empty()) {
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
        SpawnOptions so;
        so.new_session = true;
        auto pid = spawn(argv, so);
        if (!pid) {
            spdlog::critical("cannot start colmet-collector: {}", pid.error().message());
            return k_exit_unavailable;
        }
        state.collector = *pid;
        if (!wait_for_socket(socket, state.collector, 5000)) {
            spdlog::critical("the private colmet-collector did not start (see its messages above)");
            return k_exit_unavailable;
        }
    }

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
    SpawnOptions node_spawn;
    node_spawn.new_session = true;
    node_spawn.keep_term_blocked = true;
    auto node_pid = spawn(node_argv, node_spawn);
    if (!node_pid) {
        spdlog::critical("cannot start colmet-node: {}", node_pid.error().message());
        return k_exit_unavailable;
    }
    state.node = *node_pid;

    // The command: forked, moved into the job's cgroup by us, then released
    // to exec through a pipe so that it never runs outside the cgroup.
    int gate[2];
    if (::pipe2(gate, O_CLOEXEC) != 0) {
        spdlog::critical("pipe: {}", std::strerror(errno));
        return 70;
    }
    int64_t started = monotonic_ns();
    pid_t child = ::fork();
    if (child < 0) {
        spdlog::critical("fork: {}", std::strerror(errno));
        return 70;
    }
    if (child == 0) {
        ::close(gate[1]);
        char go = 0;
        if (::read(gate[0], &go, 1) != 1 || go != 'g')
            _exit(70);
        std::vector<char *> args;
        for (const auto &a : o.command)
            args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        if (as_user) {
            if (int err = become(*as_user); err != 0) {
                std::fprintf(stderr, "colmet-job: cannot become %s: %s\n", as_user->user.c_str(), std::strerror(err));
                _exit(70);
            }
            ::execvpe(args[0], args.data(), user_env.data());
        } else {
            ::execvp(args[0], args.data());
        }
        int err = errno;
        std::fprintf(stderr, "colmet-job: cannot run %s: %s\n", args[0], std::strerror(err));
        _exit(err == ENOENT ? 127 : 126);
    }
    ::close(gate[0]);
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
    if (::write(gate[1], &go, 1) != 1)
        spdlog::error("cannot release the command: {}", std::strerror(errno));
    ::close(gate[1]);

    int status = wait_for(child, -1).value_or(0);
    int64_t ended = monotonic_ns();
    g_child = 0;
    int code = go == 'g' ? exit_code_of(status) : (g_setup_signal ? 128 + g_setup_signal : 70);

    // Final sample and job end, then let the collector close the file.
    if (state.node > 0)
        terminate(state.node, 3000);
    state.node = 0;
    if (state.collector > 0) {
        wait_for_summary(job_file(hdf5_dir, job_id, JobFile::summary), 5000);
        terminate(state.collector, 10000);
        state.collector = 0;
    }
    if (auto r = cgroup::CgroupFs::remove(state.cgroup); !r)
        spdlog::error("could not remove the job's cgroup: {}", r.error().message());
    state.have_cgroup = false;
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);

    if (!o.quiet && go == 'g') {
        print_summary(job_id,
                      o.zeromq_uri.empty() ? job_file(hdf5_dir, job_id, JobFile::summary) : std::filesystem::path(),
                      status, static_cast<double>(ended - started) / 1e9, o.zeromq_uri);
        if (o.zeromq_uri.empty() && o.report_path.empty() && std::filesystem::exists(file))
            std::fprintf(stderr, "  report          colmet-report %s\n",
                         shell_word(file.lexically_normal().string()).c_str());
    }
    if (go == 'g' && !o.report_path.empty() && std::filesystem::exists(file))
        write_report(file.lexically_normal(), o.report_path, code, o.quiet);
    return code;
}

}  // namespace colmet::job
