#include "node/NodeMain.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/ProcCgroup.hpp"
#include "common/clock.hpp"
#include "common/config_section.hpp"
#include "common/cpu_list.hpp"
#include "common/file_io.hpp"
#include "common/log.hpp"
#include "common/names.hpp"
#include "common/text.hpp"
#include "node/ChooseCollector.hpp"
#include "node/JobCgroups.hpp"
#include "node/NodeControl.hpp"
#include "node/NodeOptions.hpp"
#include "node/Privileges.hpp"
#include "node/Sampler.hpp"
#include "node/backends/NodeBackends.hpp"
#include "node/backends/gpu/GpuBackend.hpp"
#include "node/backends/registry.hpp"
#include "node/delivery/SpoolFlush.hpp"
#include "node/energy/EnergyShareBackend.hpp"
#include "perf/PerfEventSpec.hpp"
#include "spec/event_list.hpp"
#include "wire/rules.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace colmet::node {
namespace {

constexpr int k_exit_usage = 64;
constexpr int k_exit_unavailable = 69;

// The job: its id, cgroups, owner, host and period.
void add_job_options(CLI::App &app, NodeOptions &o)
{
    app.add_option("--job-id", o.job_id, "Job identifier as the scheduler spells it (123, 123_4, 123.0)")
        ->required()
        ->check([](const std::string &id) {
            return valid_identifier(id) ? std::string() : "must be 1 to 128 printable ASCII characters without '/'";
        });
    app.add_option("--cgroup", o.cgroup,
                   "The job's cgroup: a path relative to the hierarchy (/oar/alice_42) or an absolute directory")
        ->required();
    app.add_option("--find-cgroup", o.find_cgroup,
                   "Find the job's directory in each hierarchy from its processes (those under --cgroup): the "
                   "directory whose path ends in this level, e.g. job_42 or job_42/step_0")
        ->check([](const std::string &level) {
            return cgroup::parse_level(level) ? std::string() : "must be path components such as job_42/step_0";
        });
    app.add_option("--cgroup-leaves", o.cgroup_leaves,
                   "cgroup v2: the job's CPU time is that of these leaves below its directory, summed (glob "
                   "patterns, comma-separated, e.g. step_*/user: Slurm's tasks without its step daemons)")
        ->delimiter(',')
        ->check([](const std::string &pattern) {
            return cgroup::parse_level(pattern) ? std::string() : "must be path components such as step_*/user";
        });
    app.add_option("--cgroup-root", o.cgroup_root, "Where the cgroup file systems are mounted")->capture_default_str();
    app.add_option("--proc-root", o.proc_root, "Where procfs is mounted")->capture_default_str();
    app.add_option("--hostname", o.hostname, "Host name sent with every message (default: this host's name)");
    app.add_option("--user", o.user, "The job's owner, recorded in the job's metadata");
    app.add_option("-s,--sample-period", o.period_s, "Seconds between samples (0.1 to 3600)")
        ->check(CLI::Range(k_min_period_s, k_max_period_s))
        ->capture_default_str();
}

// Delivery: the collector, CURVE, acknowledgements, the outbox and the spool.
void add_delivery_options(CLI::App &app, NodeOptions &o)
{
    app.add_option("--zeromq-uri", o.zmq.uri,
                   "Collector address (ZeroMQ PUSH connects here); several, comma-separated: the job's one by a hash "
                   "of the job id")
        ->join()  // a list in colmet.conf arrives as several values: one per line
        ->capture_default_str();
    app.add_option("--zeromq-hwm", o.zmq.hwm, "Messages queued at most while the collector is slow or away")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    app.add_option("--curve-server-key", o.zmq.curve_server_key,
                   "The collector's public-key file (colmet-keygen): talk to it with CURVE; several collectors: one "
                   "file for all, or one per collector, comma-separated in --zeromq-uri's order");
    app.add_option("--curve-secret-key", o.zmq.curve_secret_key,
                   "This node's CURVE key-pair file (colmet-keygen; mode 0600, root only)");
    app.add_option("--ack-uri", o.zmq.ack_uri,
                   "The collector's acknowledgement endpoint (ZeroMQ SUB connects here; default: --zeromq-uri's port + "
                   "1, or its ipc path + .ack; several collectors: one per collector in the same order; 'none': no "
                   "acknowledgements, protocol version 1)")
        ->join();
    app.add_option("--ack-timeout", o.ack_timeout_s,
                   "Seconds without an acknowledgement before the unacknowledged messages are sent again (doubling, "
                   "up to 300, while none comes)")
        ->check(CLI::Range(1.0, 3600.0))
        ->capture_default_str();
    app.add_option("--ack-wait", o.ack_wait_s,
                   "Seconds the job end waits for the collector to acknowledge the last messages")
        ->check(CLI::Range(0.0, 60.0))
        ->capture_default_str();
    app.add_option("--outbox-size", o.outbox_mib,
                   "MiB of unacknowledged messages kept in memory; beyond, the oldest go to the spool (without one: "
                   "are dropped and counted)")
        ->check(CLI::Range(0.01, 4096.0))
        ->capture_default_str();
    app.add_option("--spool-dir", o.spool_dir,
                   "The node spool: unacknowledged messages beyond --outbox-size, and at the job end all of them, "
                   "are written here until a flush delivers them (root-only; 'none': no spool)")
        ->capture_default_str();
    app.add_option("--spool-size", o.spool_mib,
                   "MiB of spool per job; beyond, its oldest messages are dropped and counted")
        ->check(CLI::Range(0.01, 65536.0))
        ->capture_default_str();
    app.add_option("--spool-node-size", o.spool_node_mib, "MiB of spool for all the jobs of the node")
        ->check(CLI::Range(0.01, 262144.0))
        ->capture_default_str();
    app.add_option("--zeromq-linger", o.zmq.linger_ms,
                   "Milliseconds spent at exit delivering queued messages (-1 = until delivered)")
        ->check(CLI::Range(-1, 60000))
        ->capture_default_str();
}

// The backends, the control socket, the metadata and the log.
void add_backend_options(CLI::App &app, NodeOptions &o)
{
    app.add_option("--disable-backend", o.disabled_backends,
                   "Do not run this backend (repeatable; see --list-backends)")
        ->check([](const std::string &name) {
            const spec::BackendInfo *b = spec::backend_info(name);
            return find_backend(name) || (b && b->kind == spec::BackendKind::derived)
                       ? std::string()
                       : "unknown backend '" + name + "' (see --list-backends)";
        });
    app.add_flag(std::string(spec::k_perfhw_flag), o.enable_perfhw,
                 "Count perf events of the job's cgroup (perf_event in cgroup mode)");
    app.add_option("--perfhw-list", o.perfhw_list,
                   "Events to count: colmet names, pmu/event/ or libpfm4 names, space- or comma-separated")
        ->capture_default_str();
    app.add_option("--perfhw-mapping-dir", o.perfhw_mapping_dir,
                   "Write perfhw_mapping.<time>.csv (counter_N to event name) into this directory")
        ->check(CLI::ExistingDirectory);
    app.add_option("--control-dir", o.control_dir,
                   "Directory of the job's control socket <dir>/<job id>.ctl for colmet-ctl (empty: none)")
        ->capture_default_str();
    app.add_option("--legacy-control-uri", o.legacy_control_uri,
                   "Also accept the original colmet configure message on this tcp:// endpoint (UNAUTHENTICATED)")
        ->check([](const std::string &uri) {
            return uri.rfind("tcp://", 0) == 0 ? std::string() : "must be a tcp:// endpoint";
        });
    // --enable-RAPL, --enable-temperature, ...: one flag per node-level backend of the catalog.
    for (const auto &b : spec::k_backend_catalog)
        if (spec::enabled_by_flag(b.kind))
            app.add_flag_callback(
                std::string(b.flag),
                [&o, name = std::string(b.name)] {
                    if (std::find(o.node_backends.begin(), o.node_backends.end(), name) == o.node_backends.end())
                        o.node_backends.push_back(name);
                },
                std::string(b.description));
    app.add_option("--rapl-mapping-dir", o.rapl_mapping_dir,
                   "Write the original's RAPL_mapping.<time>.csv into this directory")
        ->check(CLI::ExistingDirectory);
    app.add_option("--temperature-mapping-dir", o.temperature_mapping_dir,
                   "Write the original's temperature_mapping.<time>.csv into this directory")
        ->check(CLI::ExistingDirectory);
    app.add_option("--gpus", o.gpus,
                   "Backend gpu: the job's GPUs, as UUIDs or /dev/nvidia<N> numbers, comma-separated (default: "
                   "CUDA_VISIBLE_DEVICES, else SLURM_JOB_GPUS; the job's devices cgroup comes first)");
    app.add_option("--nvml-library", o.nvml_library, "Backend gpu: the NVML library to load")->capture_default_str();
    app.add_option("--energy-ledger", o.energy_ledger,
                   "Backend energy: the node's energy ledger, which every sampler of the node advances so that the "
                   "jobs' shares add up to the node's energy (empty: each job's share estimated alone)")
        ->capture_default_str();
    app.add_option("--sysfs-root", o.sysfs_root,
                   "Where sysfs is mounted (PMU descriptions, online CPUs, node-level backends)")
        ->capture_default_str();
    app.add_option("--meta", o.meta, "Extra KEY=VALUE metadata for the job (repeatable)");
    app.add_option("--log-file", o.log_file, "Log to this file instead of stderr");
    app.add_flag("-v,--verbose", o.verbosity, "More log output (-v info, -vv debug)");
}

void add_options(CLI::App &app, NodeOptions &o)
{
    add_job_options(app, o);
    add_delivery_options(app, o);
    add_backend_options(app, o);
}

size_t count_job_cpus(const cgroup::CgroupPaths &paths)
{
    // The job's cpuset if it has one, else every online CPU.
    for (const char *file : {"cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"}) {
        auto dir = paths.dir_for("cpuset");
        if (dir.empty())
            break;
        if (auto text = read_file(dir / file)) {
            if (auto cpus = parse_cpu_list(*text); cpus && !cpus->empty())
                return cpus->size();
        }
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<size_t>(n) : 1;
}

size_t mib_to_bytes(double mib) { return static_cast<size_t>(mib * 1024 * 1024); }

// Key files are read again by a later flush, from another directory.
std::string absolute_path(const std::string &path)
{
    if (path.empty())
        return path;
    std::error_code ec;
    auto abs = std::filesystem::absolute(path, ec);
    return ec ? path : abs.string();
}

std::string default_hostname()
{
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0)
        return "unknown";
    return sanitize_name(buf);
}

// Metadata from --meta KEY=VALUE: keys follow the protocol's rules and may
// not replace what colmet-node records itself.
Result<std::vector<std::pair<std::string, std::string>>> parse_meta(const std::vector<std::string> &items)
{
    static const char *const k_reserved[] = {"cgroup", "cgroups", "cgroup_warning", "cpus", "node_version",
                                             "user",   "gpus"};
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &kv : items) {
        auto eq = kv.find('=');
        if (eq == std::string::npos)
            return Error::invalid("--meta '" + kv + "': expected KEY=VALUE");
        std::string key = kv.substr(0, eq);
        if (!wire::rules::snake_name(key, wire::k_max_meta_key_length))
            return Error::invalid("--meta key '" + key + "': use 1 to 64 characters of [a-z0-9_]");
        for (const char *r : k_reserved)
            if (key == r)
                return Error::invalid("--meta key '" + key + "' is set by colmet-node itself");
        for (const auto &seen : out)
            if (seen.first == key)
                return Error::invalid("--meta key '" + key + "' given twice");
        std::string value = kv.substr(eq + 1);
        if (value.size() > wire::k_max_text_length || !wire::rules::printable_text(value))
            return Error::invalid("--meta " + key + ": at most 1024 characters, no control characters");
        out.emplace_back(std::move(key), std::move(value));
    }
    if (out.size() + 4 > wire::k_max_meta_entries)
        return Error::invalid("too many --meta entries");
    return out;
}

// --perfhw-list to event specs: every name must be known (a clear error at
// start rather than a silent gap in the data).
// Backend gpu: the job's GPUs (GpuSelection.hpp), or null with one line
// saying why (no NVML on this node, a list naming no GPU here). `meta`
// gets "<index>:<uuid>,..." of the GPUs chosen.
std::unique_ptr<MetricBackend> make_gpu(const NodeOptions &o, const cgroup::CgroupPaths &paths, std::string &meta)
{
    backends::gpu::GpuOptions g;
    g.library = o.nvml_library;
    g.list = o.gpus;
    g.list_source = "--gpus";
    for (const char *var : {"CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"})
        if (const char *value = getenv(var); g.list.empty() && value && *value) {
            g.list = value;
            g.list_source = var;
        }
    if (paths.version == cgroup::Version::v1) {
        if (auto dir = paths.dir_for("devices"); !dir.empty())
            g.devices_list = dir / "devices.list";
    }
    if (const auto dirs = paths.directories(); !dirs.empty())
        g.procs_dir = dirs.front();
    auto made = backends::gpu::GpuBackend::make(g);
    if (!made) {
        spdlog::warn("backend gpu not available: {}", made.error().message());
        return nullptr;
    }
    meta = (*made)->gpus_meta();
    spdlog::info("backend gpu: {} GPU(s) ({}), chosen by {}", (*made)->selection().indices.size(),
                 meta.empty() ? "none" : meta, (*made)->selection().source);
    return std::move(*made);
}

// The job's share of the node's energy, beside a running rapl backend
// (unless --disable-backend energy): null otherwise.
std::unique_ptr<MetricBackend> make_energy_share(const std::vector<std::unique_ptr<MetricBackend>> &running,
                                                 const NodeOptions &o, const JobContext &ctx)
{
    if (std::find(o.disabled_backends.begin(), o.disabled_backends.end(), energy::k_name) != o.disabled_backends.end())
        return nullptr;
    for (const auto &b : running)
        if (b->node_energy()) {
            std::string note;
            auto energy = energy::make_energy_share(*b, ctx, o.energy_ledger, note);
            if (energy->uses_ledger())
                spdlog::info("backend energy: the job's share of {} RAPL domains, through the node's ledger {}",
                             b->metrics().size(), o.energy_ledger);
            else
                spdlog::info("backend energy: the job's share of {} RAPL domains, estimated alone: {}",
                             b->metrics().size(), note);
            return energy;
        }
    return nullptr;
}

Result<std::vector<perf::PerfEventSpec>> resolve_perf_events(const std::vector<std::string> &list,
                                                             const std::string &sysfs_root)
{
    auto names = spec::split_event_list(list);
    if (!names)
        return names.error();
    return perf::resolve_events(*names, sysfs_root);
}

// The backends that read the job's cgroups (every job backend the options
// leave enabled), for the cgroup directories given: built at start, and
// again when the job's processes show other directories.
JobBackendBuilder job_backend_builder(const NodeOptions &o)
{
    return [o](const cgroup::CgroupPaths &where) {
        JobBackends out;
        JobContext job{o.job_id, where, o.proc_root, o.cgroup_leaves};
        for (const auto &factory : job_backends()) {
            if (std::find(o.disabled_backends.begin(), o.disabled_backends.end(), factory.name) !=
                o.disabled_backends.end())
                continue;
            auto backend = factory.make_for_job(job);
            if (!backend) {
                spdlog::warn("backend {} not available: {}", factory.name, backend.error().message());
                continue;
            }
            spdlog::info("backend {}: {} metrics", factory.name, (*backend)->metrics().size());
            out.backends.push_back(std::move(*backend));
        }
        out.meta.emplace_back("cpus", std::to_string(count_job_cpus(where)));
        return out;
    };
}

// The counter backend's controller (perfhw), from its factory, when
// --enable-perfhw asks for it; null when this build has none (logged).
std::unique_ptr<control::PerfhwController> make_counters(const NodeOptions &o, const JobContext &ctx)
{
    if (!o.enable_perfhw)
        return nullptr;
    const BackendFactory *factory = counter_backend();
    if (factory == nullptr) {
        spdlog::warn("backend perfhw not available: this colmet-node was built without it");
        return nullptr;
    }
    return factory->make_controller(ctx, {o.cgroup_root, o.sysfs_root, o.perfhw_mapping_dir});
}

// The sampler's settings: the job's collector (`zmq`), its spool, the
// perfhw events, and the job_start metadata (its cgroup, CPUs, user, GPUs,
// --meta items).
SamplerConfig sampler_config(const NodeOptions &o, const ZmqOptions &zmq, const cgroup::CgroupPaths &paths,
                             std::vector<std::pair<std::string, std::string>> extra_meta, const std::string &gpus_meta)
{
    SamplerConfig config;
    config.job_id = o.job_id;
    config.host = o.hostname.empty() ? default_hostname() : o.hostname;
    config.period_s = o.period_s;
    config.collector_uri = zmq.uri;
    config.outbox_bytes = mib_to_bytes(o.outbox_mib);
    config.ack_timeout_s = o.ack_timeout_s;
    config.ack_wait_s = o.ack_wait_s;
    if (o.spool_dir != "none" && !o.spool_dir.empty() && !zmq.ack_uri.empty()) {
        config.spool_dir = o.spool_dir;
        config.spool_limits.job_bytes = mib_to_bytes(o.spool_mib);
        config.spool_limits.node_bytes = mib_to_bytes(o.spool_node_mib);
        config.spool_target.uri = zmq.uri;
        config.spool_target.ack_uri = zmq.ack_uri;
        config.spool_target.curve_server_key = absolute_path(zmq.curve_server_key);
        config.spool_target.curve_secret_key = absolute_path(zmq.curve_secret_key);
    }
    if (o.enable_perfhw)
        if (auto names = spec::split_event_list(o.perfhw_list))
            config.perfhw_events = std::move(*names);
    if (const auto dirs = paths.directories(); !dirs.empty())
        config.cgroup_dir = dirs.front().string();
    config.meta = {
        {"cgroup", paths.relative}, {"cpus", std::to_string(count_job_cpus(paths))}, {"node_version", COLMET_VERSION}};
    if (!o.user.empty())
        config.meta.emplace_back("user", o.user);
    if (!gpus_meta.empty())
        config.meta.emplace_back("gpus", gpus_meta);
    for (auto &kv : extra_meta)
        config.meta.push_back(std::move(kv));
    return config;
}

// --user and --hostname as the wire accepts them; false (logged) otherwise.
bool valid_names(const NodeOptions &o)
{
    if (o.user.size() > wire::k_max_text_length || !wire::rules::printable_text(o.user)) {
        spdlog::critical("--user: at most 1024 characters, no control characters");
        return false;
    }
    if (!o.hostname.empty() && !valid_identifier(o.hostname)) {
        spdlog::critical("--hostname '{}': use 1 to 128 printable ASCII characters without '/'", o.hostname);
        return false;
    }
    return true;
}

int run(const NodeOptions &o)
{
    log::setup("node", o.verbosity, o.log_file);

    auto extra_meta = parse_meta(o.meta);
    if (!extra_meta) {
        spdlog::critical("{}", extra_meta.error().message());
        return k_exit_usage;
    }
    if (!valid_names(o))
        return k_exit_usage;

    // The job's collector, then its keys: an unreadable key is a set-up
    // error, whatever the job.
    auto zmq = choose_collector(o.zmq, o.job_id);
    if (!zmq) {
        spdlog::critical("{}", zmq.error().message());
        return k_exit_usage;
    }
    auto transport = make_zmq_transport(*zmq);
    if (!transport) {
        spdlog::critical("{}", transport.error().message());
        return k_exit_usage;
    }

    // Event names are checked before anything is opened: a typo is a usage error.
    Result<std::vector<perf::PerfEventSpec>> events = std::vector<perf::PerfEventSpec>{};
    if (o.enable_perfhw)
        events = resolve_perf_events(o.perfhw_list, o.sysfs_root);
    if (!events) {
        spdlog::critical("--perfhw-list: {}", events.error().message());
        return k_exit_usage;
    }

    std::optional<std::vector<std::string>> level;
    if (!o.find_cgroup.empty())
        level = cgroup::parse_level(o.find_cgroup);
    auto cgroups = std::make_unique<JobCgroups>(o.cgroup_root, o.proc_root, o.cgroup, level);
    if (auto started = cgroups->start(); !started) {
        spdlog::critical("cannot use the job's cgroup: {}", started.error().message());
        return started.error().code() == Errc::invalid ? k_exit_usage : k_exit_unavailable;
    }
    const cgroup::CgroupPaths *paths = &cgroups->paths();
    JobContext ctx{o.job_id, *paths, o.proc_root, o.cgroup_leaves};

    // The backends that read the job's cgroups: built now, and again when the
    // job's processes show other directories.
    const JobBackendBuilder build_job_backends = job_backend_builder(o);
    std::vector<std::unique_ptr<MetricBackend>> backends;
    if (cgroups->located())
        backends = build_job_backends(*paths).backends;
    else
        spdlog::info("job {}: its cgroups are not known yet ({} under {}): waiting for its first process", o.job_id,
                     o.find_cgroup, o.cgroup);
    const size_t job_backend_count = backends.size();

    // perfhw counts on the job's own directory on cgroup v2: one that does
    // not exist yet (a Slurm job's, at its prolog) is opened once found
    // (Sampler::relocate_perfhw). On v1 it counts on colmet's own perf_event
    // directory, made now, where the hooks put the job's tasks.
    auto counters = make_counters(o, ctx);
    const bool perfhw_waits = counters && !cgroups->located() && paths->version == cgroup::Version::v2;
    if (perfhw_waits)
        spdlog::info("backend perfhw: its counters open once the job's cgroup is found");
    if (counters && !perfhw_waits) {
        if (auto perf = counters->build(o.perfhw_list)) {
            backends.push_back(std::move(*perf));
        } else {
            spdlog::warn("backend perfhw not available: {}", perf.error().message());
            counters.reset();
        }
    }

    NodeBackendRequest node_request{
        {o.sysfs_root, o.proc_root}, {}, {{"rapl", o.rapl_mapping_dir}, {"temperature", o.temperature_mapping_dir}}};
    node_request.enabled = o.node_backends;
    for (auto &b : make_node_backends(node_request, realtime_ns()))
        backends.push_back(std::move(b));
    std::string gpus_meta;
    if (std::find(o.node_backends.begin(), o.node_backends.end(), backends::gpu::k_name) != o.node_backends.end())
        if (auto gpu = make_gpu(o, *paths, gpus_meta))
            backends.push_back(std::move(gpu));
    if (auto energy = make_energy_share(backends, o, ctx))
        backends.push_back(std::move(energy));

    SamplerConfig config = sampler_config(o, *zmq, *paths, std::move(*extra_meta), gpus_meta);
    spdlog::info("sampling job {} ({}) every {} s to {}{}{}{}", o.job_id, cgroups->describe(), o.period_s, zmq->uri,
                 zmq->uri == o.zmq.uri ? "" : " (the job's collector of those in --zeromq-uri)",
                 o.zmq.curve_secret_key.empty() ? "" : " (CURVE)",
                 zmq->ack_uri.empty() ? ", no acknowledgements" : ", acknowledgements from " + zmq->ack_uri);
    const bool perfhw_running = counters != nullptr;  // counting, or waiting for the job's cgroup
    const std::string spool_dir = config.spool_dir;
    Sampler sampler(std::move(config), std::move(backends), std::move(*transport));
    sampler.set_job_cgroups(std::move(cgroups), job_backend_count, build_job_backends);
    if (counters)
        sampler.set_perfhw_controller(std::move(counters));
    attach_control(sampler, ctx, {o.control_dir, o.legacy_control_uri, o.user});
    // Started: from here on, only what sampling needs (Privileges.hpp).
    PrivilegeNeeds needs;
    for (const auto &b : spec::k_backend_catalog) {
        const bool running =
            b.kind == spec::BackendKind::perfhw ? perfhw_running
            : spec::enabled_by_flag(b.kind)
                ? std::find(o.node_backends.begin(), o.node_backends.end(), b.name) != o.node_backends.end()
                : std::find(o.disabled_backends.begin(), o.disabled_backends.end(), b.name) ==
                      o.disabled_backends.end();
        needs.perf = needs.perf || (running && b.privilege == spec::Privilege::perf_open);
        needs.other_proc = needs.other_proc || (running && b.privilege == spec::Privilege::other_proc);
    }
    if (auto kept = drop_privileges(needs); !kept)
        spdlog::warn("could not drop privileges, sampling with those of the start: {}", kept.error().message());
    else if (!kept->empty())
        spdlog::info("privileges: every capability dropped but {} (bounding set too), no new privileges",
                     text::join(*kept, ", "));
    // Jobs that ended while their collector was away left data in the
    // spool: a flush in the background sends it once a collector answers
    // (with the privileges left: the spool and the keys are root's).
    if (!spool_dir.empty())
        start_background_flush(spool_dir, o.log_file);
    sampler.run();
    return 0;
}

}  // namespace

int node_main(int argc, char **argv)
{
    // SIGTERM/SIGINT stay pending until the sampler reads them from its
    // signalfd: one that arrives during start-up still gets a job end.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, nullptr);

    CLI::App app{"colmet-node: samples one job's cgroup and sends the values to colmet-collector", "colmet-node"};
    app.set_version_flag("--version", std::string("colmet-node ") + COLMET_VERSION);
    use_config_section(app, "node", "/etc/colmet/colmet.conf");
    NodeOptions options;
    add_options(app, options);
    app.add_flag_callback(
        "--list-backends",
        [] {
            for (const auto &b : spec::k_backend_catalog) {
                std::string how = b.kind == spec::BackendKind::node ? " (node; " + std::string(b.flag) + ")"
                                  : b.kind == spec::BackendKind::device
                                      ? " (job's devices; " + std::string(b.flag) + ")"
                                  : b.kind == spec::BackendKind::perfhw ? " (" + std::string(b.flag) + ")"
                                                                        : "";
                bool built = b.kind == spec::BackendKind::perfhw || b.kind == spec::BackendKind::derived ||
                             b.kind == spec::BackendKind::device || find_backend(b.name) || find_node_backend(b.name);
                std::printf("%-16s %s%s%s\n", std::string(b.name).c_str(), std::string(b.description).c_str(),
                            how.c_str(), built ? "" : " [not in this build]");
            }
            throw CLI::Success();
        },
        "List the backends and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : k_exit_usage;
    }
    return run(options);
}

}  // namespace colmet::node
