#include "collector/CollectorMain.hpp"

#include "collector/Collector.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "collector/sinks/stdout/StdoutSink.hpp"
#include "common/config_section.hpp"
#include "common/log.hpp"

#include <CLI/CLI.hpp>

#include <csignal>
#include <malloc.h>
#include <sys/resource.h>

namespace colmet::collector {
namespace {

struct CollectorOptions {
    ListenOptions listen;
    Hdf5Options hdf5;
    std::string hdf5_dir;
    bool to_stdout = false;
    std::string log_file;
    int verbosity = 0;
};

void add_options(CLI::App &app, CollectorOptions &o)
{
    app.add_option("--zeromq-bind-uri", o.listen.bind_uri, "Where to listen (ZeroMQ PULL binds here)")
        ->capture_default_str();
    app.add_option("--zeromq-hwm", o.listen.hwm, "Messages queued at most in the receive socket")
        ->check(CLI::Range(1, 10000000))
        ->capture_default_str();
    app.add_option("--hdf5-dir", o.hdf5_dir, "Write one HDF5 file per job into this directory");
    app.add_option("--hdf5-compression", o.hdf5.compression_level, "Deflate compression level of the datasets (0 = none)")
        ->check(CLI::Range(0, 9))
        ->capture_default_str();
    app.add_option("--flush-interval", o.hdf5.flush_interval_s, "Write buffered rows to the files at least this often, in seconds (0.1 to 5)")
        ->check(CLI::Range(0.1, 5.0))
        ->capture_default_str();
    app.add_option("--max-open-files", o.hdf5.max_open_files, "HDF5 files kept open at most")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    app.add_option("--idle-close", o.hdf5.idle_close_s, "Close the file of a job that sent nothing for this many seconds")
        ->check(CLI::Range(1.0, 86400.0))
        ->capture_default_str();
    app.add_flag("--stdout", o.to_stdout, "Also print every message on standard output");
    app.add_option("--log-file", o.log_file, "Log to this file instead of stderr");
    app.add_flag("-v,--verbose", o.verbosity, "More log output (-v info, -vv debug)");
}

// Each open HDF5 file holds a descriptor: raise the soft limit to the hard
// one, and keep --max-open-files below what the limit allows.
void fit_open_files(Hdf5Options &hdf5)
{
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    constexpr size_t k_reserved = 64;  // sockets, logs, libraries
    if (rl.rlim_cur != RLIM_INFINITY && hdf5.max_open_files + k_reserved > rl.rlim_cur) {
        size_t fit = rl.rlim_cur > 2 * k_reserved ? rl.rlim_cur - k_reserved : k_reserved;
        spdlog::warn("--max-open-files {} does not fit the descriptor limit {}: using {}", hdf5.max_open_files,
                     rl.rlim_cur, fit);
        hdf5.max_open_files = fit;
    }
}

} // namespace

int collector_main(int argc, char **argv)
{
    CLI::App app{"colmet-collector: receives colmet-node messages and stores one HDF5 file per job",
                 "colmet-collector"};
    app.set_version_flag("--version", std::string("colmet-collector ") + COLMET_VERSION);
    use_config_section(app, "collector", "/etc/colmet/colmet.conf");
    CollectorOptions o;
    add_options(app, o);
    try {
        app.parse(argc, argv);
        if (o.hdf5_dir.empty() && !o.to_stdout)
            throw CLI::ValidationError("output", "give --hdf5-dir DIR, --stdout, or both");
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 64;
    }
    log::setup("collector", o.verbosity, o.log_file);

    // zlib allocates ~270 KB for every chunk it compresses; without this,
    // glibc returns that memory to the kernel each time (measured: 3-4x the
    // CPU of the HDF5 flushes).
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);  // ...and takes it from the heap, not from a fresh mmap each time

    std::vector<std::unique_ptr<Sink>> sinks;
    if (!o.hdf5_dir.empty()) {
        o.hdf5.dir = o.hdf5_dir;
        fit_open_files(o.hdf5);
        auto sink = make_hdf5_sink(o.hdf5);
        if (!sink) {
            spdlog::critical("{}", sink.error().message());
            return 73;
        }
        sinks.push_back(std::move(*sink));
    }
    if (o.to_stdout)
        sinks.push_back(std::make_unique<StdoutSink>());

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    Collector collector(std::move(sinks));
    if (!o.log_file.empty())
        o.listen.reopen_log = [verbosity = o.verbosity, file = o.log_file] {
            try {
                log::setup("collector", verbosity, file);
            } catch (const std::exception &e) {
                spdlog::error("SIGHUP: cannot re-open the log file {}: {}; still logging to the old one", file,
                              e.what());
            }
        };
    return serve(collector, o.listen);
}

} // namespace colmet::collector
