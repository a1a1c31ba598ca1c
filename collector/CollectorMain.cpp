#include "collector/CollectorMain.hpp"

#include "common/collectors.hpp"

#include "collector/Collector.hpp"
#include "collector/notify/JobEndCommand.hpp"
#include "collector/security/BindPolicy.hpp"
#include "collector/serve.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "collector/sinks/stdout/StdoutSink.hpp"
#include "collector/sinks/tsdb/TsdbSink.hpp"
#include "common/config_section.hpp"
#include "common/log.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

namespace colmet::collector {
namespace {

struct CollectorOptions {
    ListenOptions listen;
    Hdf5Options hdf5;
    tsdb::TsdbOptions tsdb;
    AdmissionLimits admission;
    notify::JobEndOptions job_end;
    std::string hdf5_dir;
    bool to_stdout = false;
    bool allow_unauthenticated = false;
    bool allow_root = false;
    double idle_timeout_s = 600;
    std::string log_file;
    int verbosity = 0;
};

// The time-series sink: --tsdb-* here, the keys of [tsdb] in colmet.conf.
void add_tsdb_options(CLI::App &app, tsdb::TsdbOptions &t)
{
    app.add_option("--tsdb-url", t.http.url,
                   "Also send every value to this time-series store (http:// or https://), e.g. "
                   "http://vm:8428/api/v1/write")
        ->check([](const std::string &url) {
            return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0
                       ? std::string()
                       : std::string("expected an http:// or https:// URL");
        });
    app.add_option_function<std::string>(
           "--tsdb-protocol", [&t](const std::string &name) { t.protocol = *tsdb::parse_protocol(name); },
           "remote-write (Prometheus remote write: VictoriaMetrics, Prometheus, Thanos, Mimir) or influx "
           "(InfluxDB line protocol)")
        ->check(CLI::IsMember({"remote-write", "influx"}))
        ->default_str(tsdb::protocol_name(t.protocol));
    app.add_option("--tsdb-cluster", t.cluster, "The cluster label of every point (default: none)");
    app.add_option("--tsdb-batch-points", t.batch_points, "Send a batch when it holds this many points")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    app.add_option("--tsdb-batch-interval", t.batch_interval_s, "...or when it is this many seconds old")
        ->check(CLI::Range(0.1, 60.0))
        ->capture_default_str();
    app.add_option_function<double>(
           "--tsdb-queue", [&t](const double &mib) { t.http.queue_bytes = static_cast<size_t>(mib * (1 << 20)); },
           "MiB of batches kept while the store is slow or away; beyond, the oldest are dropped and counted")
        ->check(CLI::Range(0.01, 65536.0))
        ->default_str(std::to_string(t.http.queue_bytes >> 20));
    app.add_option("--tsdb-timeout", t.http.timeout_s, "Seconds a request may take before it is retried")
        ->check(CLI::Range(0.1, 600.0))
        ->capture_default_str();
    app.add_option("--tsdb-bearer-token-file", t.http.bearer_token_file,
                   "Send 'Authorization: Bearer' with the first line of this file (readable by the collector only)");
    app.add_option("--tsdb-basic-auth-file", t.http.basic_auth_file,
                   "HTTP basic authentication with the first line of this file, user:password");
    app.add_option("--tsdb-ca-file", t.http.ca_file, "TLS: trust the certificate authorities of this file");
}

// The receiving and acknowledgement sockets: addresses, CURVE, connection limits.
void add_listen_options(CLI::App &app, CollectorOptions &o)
{
    app.add_option("--zeromq-bind-uri", o.listen.bind_uri,
                   std::string("Where to listen (ZeroMQ PULL binds here; default: ") + k_default_bind_secure +
                       " with --curve-secret-key, else " + k_default_bind_loopback + ")");
    app.add_option("--ack-bind-uri", o.listen.ack_bind_uri,
                   "Where acknowledgements are published (ZeroMQ PUB binds here; default: --zeromq-bind-uri's port + "
                   "1, or its ipc path + .ack; 'none': no acknowledgements, senders then get protocol version 1 "
                   "delivery)");
    app.add_option(
        "--curve-secret-key", o.listen.curve_secret_key,
        "The collector's CURVE key-pair file (colmet-keygen): only nodes with a key in --nodes-dir may send");
    o.listen.nodes_dir = "/etc/colmet/nodes.d";
    app.add_option("--nodes-dir", o.listen.nodes_dir,
                   "Directory of the nodes' public-key files, one '<host> <key>' line per key (reloaded on SIGHUP)")
        ->capture_default_str();
    app.add_flag("--allow-unauthenticated", o.allow_unauthenticated,
                 "Without --curve-secret-key, listen on a non-loopback address anyway (any user could then write "
                 "into any job's file)");
    app.add_option("--max-connections", o.listen.connections.max_connections,
                   "Connections kept open at most on the receiving socket, and as many on the acknowledgement "
                   "socket; beyond, the oldest that never carried a message is cut (acknowledgements: the new one)")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    app.add_option("--idle-timeout", o.idle_timeout_s,
                   "Cut a connection that carried no message for this many seconds (its sampler reconnects when it "
                   "next sends)")
        ->check(CLI::Range(1.0, 86400.0))
        ->capture_default_str();
    app.add_option("--zeromq-hwm", o.listen.hwm, "Messages queued at most per connection in the receive socket")
        ->check(CLI::Range(1, 10000000))
        ->capture_default_str();
}

// The HDF5 sink: its directory, files, compression, flushes and memory.
void add_hdf5_options(CLI::App &app, CollectorOptions &o)
{
    app.add_option("--hdf5-dir", o.hdf5_dir, "Write one HDF5 file per job into this directory");
    app.add_option("--name", o.hdf5.writer,
                   "This collector's name, recorded in every job file it writes; a file that names another "
                   "collector is left alone (default: '<host name> <bind URI>')")
        ->check([](const std::string &name) {
            const bool printable = std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
            return !name.empty() && name.size() <= 256 && printable
                       ? std::string()
                       : std::string("use 1 to 256 printable ASCII characters");
        });
    app.add_option_function<std::string>(
           "--hdf5-owner",
           [&o](const std::string &name) {
               if (auto owner = hdf5::parse_file_owner(name))
                   o.hdf5.owner = *owner;
           },
           "Who may read a job's file besides the collector's user and group: job-user (the job's user, by a POSIX "
           "ACL entry) or collector (nobody else)")
        ->check([](const std::string &name) {
            return hdf5::parse_file_owner(name) ? std::string()
                                                : "'" + name + "' is not one of: " + hdf5::file_owner_names();
        })
        ->default_str(std::string(hdf5::file_owner_name(o.hdf5.owner)));
    app.add_flag("--hdf5-fsync", o.hdf5.fsync,
                 "fsync() a job's file after each flush, before acknowledging its rows: they then survive a crash of "
                 "this machine, not only of the collector");
    app.add_option("--hdf5-compression", o.hdf5.compression_level,
                   "Deflate compression level of the datasets (0 = none)")
        ->check(CLI::Range(0, 9))
        ->capture_default_str();
    app.add_option("--flush-interval", o.hdf5.flush_interval_s,
                   "Write buffered rows to the files at least this often, in seconds (0.1 to 5)")
        ->check(CLI::Range(0.1, 5.0))
        ->capture_default_str();
    app.add_option("--max-open-files", o.hdf5.max_open_files, "HDF5 files kept open at most")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    app.add_option("--idle-close", o.hdf5.idle_close_s,
                   "Close the file of a job that sent nothing for this many seconds")
        ->check(CLI::Range(1.0, 86400.0))
        ->capture_default_str();
    app.add_option_function<uint64_t>(
           "--memory-budget", [&o](const uint64_t &mib) { o.hdf5.memory_budget_bytes = mib << 20; },
           "Memory the HDF5 sink keeps under, in MiB: beyond, it closes files, writes buffers early, then drops rows")
        ->check(CLI::Range(8, 1048576))
        ->default_str(std::to_string(o.hdf5.memory_budget_bytes >> 20));
    app.add_option_function<uint64_t>(
           "--min-free-space", [&o](const uint64_t &mib) { o.hdf5.min_free_bytes = mib << 20; },
           "Pause writing while the HDF5 directory's file system has less free space than this, in MiB (0 = never)")
        ->check(CLI::Range(0, 1048576))
        ->default_str(std::to_string(o.hdf5.min_free_bytes >> 20));
}

// Admission: what the collector accepts of each host and job.
void add_admission_options(CLI::App &app, CollectorOptions &o)
{
    app.add_option("--max-clock-skew", o.admission.max_clock_skew_s,
                   "Refuse a message whose time is this many seconds ahead of the collector's clock, or this plus "
                   "--max-message-delay behind it (0 = no time check)")
        ->check(CLI::Range(0.0, 604800.0))
        ->capture_default_str();
    app.add_option("--max-message-delay", o.admission.max_message_delay_s,
                   "Seconds a node may have held a message (its outbox and spool, while the collector was away), on "
                   "top of --max-clock-skew")
        ->check(CLI::Range(0.0, 2592000.0))
        ->capture_default_str();
    app.add_option("--max-hosts-per-job", o.admission.max_hosts_per_job,
                   "Refuse messages of a job from more hosts than this (0 = no cap)")
        ->check(CLI::Range(0, 10000000))
        ->capture_default_str();
    app.add_option("--max-jobs-per-host", o.admission.max_jobs_per_host,
                   "Refuse new jobs on a host that already runs this many (0 = no cap)")
        ->check(CLI::Range(0, 10000000))
        ->capture_default_str();
    app.add_option("--max-new-jobs-per-minute", o.admission.max_new_jobs_per_minute,
                   "Refuse new jobs on a host beyond this many per minute (0 = no cap)")
        ->check(CLI::Range(0, 10000000))
        ->capture_default_str();
}

// At job end and while jobs run: the on-job-end command and the waste flags.
void add_job_end_options(CLI::App &app, CollectorOptions &o)
{
    app.add_option("--on-job-end", o.job_end.command,
                   "Run this shell command for each ended job, its summary as JSON on standard input (needs "
                   "--hdf5-dir; e.g. colmet-mail-summary)");
    app.add_option("--on-job-end-timeout", o.job_end.timeout_s,
                   "Seconds an on-job-end command may run before it is killed")
        ->check(CLI::Range(0.1, 86400.0))
        ->capture_default_str();
    app.add_option("--on-job-end-max", o.job_end.max_running,
                   "On-job-end commands run at once at most; the jobs beyond wait (1000 at most, then dropped)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    flags::FlagRules &rules = o.hdf5.flag_rules;
    app.add_option("--flag-cpu-efficiency", rules.cpu_efficiency,
                   "Flag low_cpu_efficiency: CPU efficiency below this over a --flag-window, or over a whole job at "
                   "least that long (0 = off)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    app.add_option("--flag-window", rules.window_s,
                   "Seconds of the windows the CPU and GPU flags judge a running job over")
        ->check(CLI::Range(1.0, 604800.0))
        ->capture_default_str();
    app.add_option("--flag-memory-fraction", rules.memory_fraction,
                   "Flag memory_unused: a host's peak memory below this fraction of the memory the job asked for "
                   "there (0 = off)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    app.add_option("--flag-memory-min", rules.memory_min_mib,
                   "MiB a job must have asked for on a host for memory_unused to judge it")
        ->check(CLI::Range(0.0, 1e9))
        ->capture_default_str();
    app.add_option("--flag-gpu-utilisation", rules.gpu_utilisation,
                   "Flag gpu_idle: mean GPU utilisation below this over a --flag-window, or a whole job (0 = off)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    app.add_option("--flag-silence", rules.silence_s,
                   "Flag stopped_sending: a host of a running job silent this many seconds, and at least 3 of its "
                   "periods (0 = off)")
        ->check(CLI::Range(0.0, 604800.0))
        ->capture_default_str();
}

void add_options(CLI::App &app, CollectorOptions &o)
{
    add_listen_options(app, o);
    add_hdf5_options(app, o);
    add_admission_options(app, o);
    add_job_end_options(app, o);
    app.add_flag("--allow-root", o.allow_root,
                 "Run even as root (the collector needs no privilege: run it as its own user, as "
                 "colmet-collector.service does)");
    app.add_flag("--stdout", o.to_stdout, "Also print every message on standard output");
    add_tsdb_options(app, o.tsdb);
    app.add_option("--log-file", o.log_file, "Log to this file instead of stderr");
    app.add_flag("-v,--verbose", o.verbosity, "More log output (-v info, -vv debug)");
}

// Every open HDF5 file and every connection holds a descriptor: raise the
// soft limit to the hard one once, then keep --max-open-files (when there
// are files) and, after the files, --max-connections within it, 64
// descriptors kept for sockets, logs and libraries. With acknowledgements,
// --max-connections holds for each of the two sockets (a sampler connects
// to both), so twice that must fit.
void fit_descriptors(Hdf5Options *hdf5, ConnectionLimits &connections, bool ack_socket)
{
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY)
        return;
    constexpr size_t k_reserved = 64;
    if (hdf5 && hdf5->max_open_files + k_reserved > rl.rlim_cur) {
        size_t fit = rl.rlim_cur > 2 * k_reserved ? rl.rlim_cur - k_reserved : k_reserved;
        spdlog::warn("--max-open-files {} does not fit the descriptor limit {}: using {}", hdf5->max_open_files,
                     rl.rlim_cur, fit);
        hdf5->max_open_files = fit;
    }
    const size_t files = hdf5 ? hdf5->max_open_files : 0;
    const size_t sockets = ack_socket ? 2 : 1;
    const size_t left =
        (rl.rlim_cur > files + 2 * k_reserved ? rl.rlim_cur - files - k_reserved : k_reserved) / sockets;
    if (connections.max_connections > left) {
        spdlog::info("max-connections {} does not fit the descriptor limit {} (with --max-open-files {}{}): using {}",
                     connections.max_connections, rl.rlim_cur, files, ack_socket ? ", for each of the two sockets" : "",
                     left);
        connections.max_connections = left;
    }
}

}  // namespace

// The receiving and acknowledgement endpoints: defaults filled in, each
// checked against the bind policy (BindPolicy.hpp), warnings for an
// unauthenticated or private-/tmp one. False when refused (logged).
bool settle_endpoints(CollectorOptions &o)
{
    const bool authenticated = !o.listen.curve_secret_key.empty();
    if (o.listen.bind_uri.empty())
        o.listen.bind_uri = authenticated ? k_default_bind_secure : k_default_bind_loopback;
    if (auto r = check_bind(o.listen.bind_uri, authenticated, o.allow_unauthenticated); !r) {
        spdlog::critical("{}", r.error().message());
        return false;
    }
    if (o.listen.ack_bind_uri == k_no_ack_endpoint) {
        o.listen.ack_bind_uri.clear();
    } else {
        if (o.listen.ack_bind_uri.empty()) {
            auto derived = ack_endpoint_of(o.listen.bind_uri);
            if (!derived) {
                spdlog::critical("--ack-bind-uri: {}", derived.error().message());
                return false;
            }
            o.listen.ack_bind_uri = std::move(*derived);
        }
        if (auto r = check_bind(o.listen.ack_bind_uri, authenticated, o.allow_unauthenticated); !r) {
            spdlog::critical("--ack-bind-uri: {}", r.error().message());
            return false;
        }
    }
    if (!authenticated && !is_loopback_endpoint(o.listen.bind_uri))
        spdlog::warn("listening on {} WITHOUT AUTHENTICATION (allow-unauthenticated): any user who reaches it can "
                     "write into any job's file; see colmet-keygen(8)",
                     o.listen.bind_uri);
    for (const auto *uri : {&o.listen.bind_uri, &o.listen.ack_bind_uri})
        if (const auto warning = private_tmp_warning(*uri, std::getenv("INVOCATION_ID")); !warning.empty())
            spdlog::warn("{}", warning);
    o.listen.connections.idle_timeout_ns = static_cast<int64_t>(o.idle_timeout_s * 1e9);
    return true;
}

// The sinks the options ask for (HDF5, time series, stdout), in that
// order; 0, or the exit status when one cannot start (logged).
int make_sinks(CollectorOptions &o, std::vector<std::unique_ptr<Sink>> &sinks)
{
    if (!o.hdf5_dir.empty()) {
        o.hdf5.dir = o.hdf5_dir;
        auto sink = make_hdf5_sink(o.hdf5);
        if (!sink) {
            spdlog::critical("{}", sink.error().message());
            return 73;
        }
        spdlog::info("writing job files into {} as the collector '{}'", (*sink)->dir().string(), o.hdf5.writer);
        sinks.push_back(std::move(*sink));
    }
    if (!o.tsdb.http.url.empty()) {
        o.tsdb.flag_rules = o.hdf5.flag_rules;
        auto sink = tsdb::TsdbSink::make(o.tsdb);
        if (!sink) {
            spdlog::critical("{}", sink.error().message());
            return 78;
        }
        spdlog::info("sending every value to {} ({}{}{})", o.tsdb.http.url, tsdb::protocol_name(o.tsdb.protocol),
                     o.tsdb.cluster.empty() ? "" : ", cluster ", o.tsdb.cluster);
        sinks.push_back(std::move(*sink));
    }
    if (o.to_stdout)
        sinks.push_back(std::make_unique<StdoutSink>());
    return 0;
}

int collector_main(int argc, char **argv)
{
    CLI::App app{"colmet-collector: receives colmet-node messages, stores one HDF5 file per job and/or sends the "
                 "values to a time-series store",
                 "colmet-collector"};
    app.set_version_flag("--version", std::string("colmet-collector ") + COLMET_VERSION);
    use_config_section(app, "collector", "/etc/colmet/colmet.conf", {"tsdb"});
    CollectorOptions o;
    add_options(app, o);
    try {
        app.parse(argc, argv);
        if (o.hdf5_dir.empty() && !o.to_stdout && o.tsdb.http.url.empty())
            throw CLI::ValidationError("output", "give --hdf5-dir DIR, --tsdb-url URL or --stdout (or several)");
        if (!o.job_end.command.empty() && o.hdf5_dir.empty())
            throw CLI::ValidationError("--on-job-end", "needs --hdf5-dir: the summary it gets is the job file's");
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 64;
    }
    log::setup("collector", o.verbosity, o.log_file);
    if (::geteuid() == 0 && !o.allow_root) {
        spdlog::critical("refusing to run as root: the collector needs no privilege (colmet-collector(8), "
                         "SECURITY); run it as its own user, as colmet-collector.service does, or pass --allow-root "
                         "(allow-root = yes)");
        return 78;
    }

    if (!settle_endpoints(o))
        return 64;

    // zlib allocates ~270 KB for every chunk it compresses; without this,
    // glibc returns that memory to the kernel each time (measured: 3-4x the
    // CPU of the HDF5 flushes).
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);  // ...and takes it from the heap, not from a fresh mmap each time

    if (o.hdf5.writer.empty()) {
        std::array<char, 256> host{};
        if (::gethostname(host.data(), host.size() - 1) != 0)
            std::snprintf(host.data(), host.size(), "unknown-host");
        o.hdf5.writer = std::string(host.data()) + " " + o.listen.bind_uri;
    }
    fit_descriptors(o.hdf5_dir.empty() ? nullptr : &o.hdf5, o.listen.connections, !o.listen.ack_bind_uri.empty());
    std::vector<std::unique_ptr<Sink>> sinks;
    if (int rc = make_sinks(o, sinks); rc != 0)
        return rc;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    // After the signals are blocked: its thread must not take them.
    std::unique_ptr<notify::JobEndCommand> job_end;
    if (!o.job_end.command.empty()) {
        job_end = std::make_unique<notify::JobEndCommand>(o.job_end);
        for (auto &sink : sinks)
            if (sink->announces_ended_jobs())
                sink->set_ended_job_listener(
                    [runner = job_end.get()](EndedJob job) { runner->submit(std::move(job)); });
        spdlog::info("on-job-end: running '{}' for each ended job (at most {} at once, {} s each)", o.job_end.command,
                     o.job_end.max_running, o.job_end.timeout_s);
    }
    Collector collector(std::move(sinks), o.admission);
    if (!o.log_file.empty())
        o.listen.reopen_log = [verbosity = o.verbosity, file = o.log_file] {
            try {
                log::setup("collector", verbosity, file);
            } catch (const std::exception &e) {
                spdlog::error("SIGHUP: cannot re-open the log file {}: {}; still logging to the old one", file,
                              e.what());
            }
        };
    const int rc = serve(collector, o.listen);
    if (job_end) {
        job_end->stop();
        spdlog::info("{}", job_end->stats_text());
    }
    return rc;
}

}  // namespace colmet::collector
