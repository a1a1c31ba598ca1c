#include "job/StartCommand.hpp"

#include "cgroup/CgroupFs.hpp"
#include "cgroup/PerfEventHierarchy.hpp"
#include "common/clock.hpp"
#include "common/config_section.hpp"
#include "common/log.hpp"
#include "common/names.hpp"
#include "common/text.hpp"
#include "job/CommandLine.hpp"
#include "job/Detach.hpp"
#include "job/HookSupport.hpp"
#include "job/Process.hpp"
#include "job/SamplerRecord.hpp"
#include "job/SpecEvents.hpp"
#include "node/NodeOptions.hpp"
#include "node/delivery/SpoolFlush.hpp"
#include "scheduler/JobContext.hpp"
#include "scheduler/Profile.hpp"
#include "spec/JobSpec.hpp"
#include "spec/backend_catalog.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <optional>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace colmet::job {
namespace fs = std::filesystem;

namespace {

const node::NodeOptions k_node_defaults;  // colmet-node's own defaults
constexpr auto k_start_check = std::chrono::milliseconds(300);

// The [node] keys of the configuration file that decide what status shows;
// colmet-node reads the same file, and start passes the values explicitly
// so that what the record says is what is in force.
struct NodeDefaults {
    double period_s = k_node_defaults.period_s;
    std::string uri = k_node_defaults.zmq.uri;
    std::string spool_dir = k_node_defaults.spool_dir;
};

NodeDefaults read_node_defaults(const std::string &config)
{
    NodeDefaults d;
    std::ifstream in(config);
    if (!in)
        return d;
    try {
        for (const auto &item : SectionConfig("node").from_config(in)) {
            if (item.inputs.empty())
                continue;
            if (item.name == "sample-period" || item.name == "sample_period" || item.name == "s")
                d.period_s = std::stod(item.inputs.front());
            else if (item.name == "zeromq-uri" || item.name == "zeromq_uri")
                d.uri = text::join(item.inputs, ",");  // a list of collectors arrives as several values
            else if (item.name == "spool-dir" || item.name == "spool_dir")
                d.spool_dir = item.inputs.front();
        }
    } catch (const std::exception &e) {
        spdlog::warn("{}: {} (colmet-node will refuse it too)", config, e.what());
    }
    return d;
}

// The topmost ancestor of `relative` (a normalized "/a/b/job" path, the job's
// own directory excluded) that exists in no hierarchy: the first level that
// create() will make besides the job's directory. "" when the parent exists.
std::string topmost_missing_ancestor(const cgroup::CgroupFs &cgfs, const std::string &relative)
{
    for (size_t slash = relative.find('/', 1); slash != std::string::npos; slash = relative.find('/', slash + 1)) {
        std::string level = relative.substr(0, slash);
        auto found = cgfs.resolve(level);
        if (!found && found.error().code() == Errc::not_found)
            return level;
    }
    return "";
}

// When the job's parent levels already exist because another running job's
// start made them (its record says so), they stay colmet's to remove:
// whichever of those jobs ends last removes them. The highest such level.
// The levels above their job directories that running jobs' starts made
// (their records' created_from) under this cgroup root.
std::vector<std::string> levels_colmet_made(const StartOptions &o)
{
    std::vector<std::string> out;
    for (const auto &[path, other] : list_records(o.run_dir))
        if (other && other->job_cgroup_created && other->cgroup_root == o.cgroup_root && !other->created_from.empty())
            out.push_back(other->created_from);
    return out;
}

std::string levels_made_by_others(const StartOptions &o, const std::string &relative)
{
    std::string top;
    for (const auto &from : levels_colmet_made(o))
        if (cgroup_below(relative, from) && (top.empty() || from.size() < top.size()))
            top = from;
    return top;
}

// User names reach paths (/oar/<user>_<job>) and the node's command line.
bool valid_user(const std::string &user)
{
    return !user.empty() && user.size() <= 256 && user.find('/') == std::string::npos &&
           std::all_of(user.begin(), user.end(), [](unsigned char c) { return c > ' ' && c < 127; });
}

// Top-level levels that running jobs' starts made themselves ("/slurm"). A
// job directory made under levels that already existed says nothing of who
// made those.
std::vector<std::string> top_levels_colmet_made(const StartOptions &o)
{
    std::vector<std::string> out;
    for (const auto &from : levels_colmet_made(o))
        out.push_back(from.substr(0, from.find('/', 1)));
    return out;
}

// Where the job is, and who makes its cgroups: the path the hook gave
// (--cgroup), else the scheduler's profile (--scheduler).
Result<sched::Placement> placement(const StartOptions &o, const cgroup::CgroupFs &cgfs)
{
    if (!o.cgroup.empty()) {
        sched::Placement p;
        p.relative = o.cgroup;
        p.level = o.find_cgroup;
        p.scheduler_cgroups = !o.create_cgroup;
        return p;
    }
    const sched::Profile *profile = sched::find_profile(o.scheduler);
    if (!profile)
        return Error::invalid("give --cgroup or --scheduler " + text::join(sched::profile_names(), "|"));
    auto p = profile->place({o.job_id, o.user, cgfs.root(), cgfs.detect() == cgroup::Version::v2,
                             [&o] { return top_levels_colmet_made(o); }});
    if (p && !p->note.empty())
        spdlog::debug("job {}: {}", o.job_id, p->note);
    return p;
}

// Wait briefly: colmet-node refuses bad options or a missing cgroup at once,
// and the admin should read that in this command's log rather than later.
bool survives_start(const SamplerRecord &record)
{
    auto deadline = std::chrono::steady_clock::now() + k_start_check;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!sampler_alive(record))
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return sampler_alive(record);
}

// The job's context (--context KEY=VALUE, as the hook read it from its
// scheduler) as colmet-node --meta arguments. A bad item is logged and left
// out: the job is sampled all the same.
std::vector<std::string> context_meta_args(const StartOptions &o)
{
    std::vector<std::string> out;
    for (const auto &item : o.context) {
        auto parsed = sched::parse_context_item(item);
        if (!parsed) {
            spdlog::error("job {}: {}; left out", o.job_id, parsed.error().message());
            continue;
        }
        out.insert(out.end(), {"--meta", parsed->first + "=" + parsed->second});
    }
    return out;
}

// The job's spec (--spec, the user's request): a bad one is reported, and
// the job is sampled with the site defaults rather than not at all.
spec::JobSpec effective_spec(const StartOptions &o)
{
    spec::JobSpec spec;
    if (auto parsed = spec::parse_spec(o.spec); !parsed) {
        spdlog::error("job {}: ignoring colmet spec '{}': {}; sampling with the site defaults", o.job_id, o.spec,
                      parsed.error().message());
    } else if (auto checked = check_spec_events(*parsed, o.sysfs_root); !checked) {
        spdlog::error("job {}: ignoring colmet spec '{}': {}; sampling with the site defaults", o.job_id, o.spec,
                      checked.error().message());
    } else {
        spec = *parsed;
    }
    if (!spec.perfhw && o.enable_perfhw) {
        spec.perfhw = true;
        spec.events = o.perfhw_list;
    }
    return spec;
}

// The record of an earlier sampler of the job: nullopt and `running` when
// one still runs; a dead one's record (what it created is ours to remove),
// its file removed.
std::optional<SamplerRecord> earlier_sampler(const StartOptions &o, const fs::path &record_file, bool &running)
{
    std::error_code ec;
    running = false;
    if (!fs::exists(record_file, ec))
        return std::nullopt;
    auto old = read_record(record_file);
    if (old && sampler_alive(*old)) {
        spdlog::warn("job {}: a sampler is already running (pid {}); nothing to do", o.job_id, old->pid);
        running = true;
        return std::nullopt;
    }
    spdlog::warn("job {}: the sampler recorded in {} is gone; starting a new one", o.job_id, record_file.string());
    fs::remove(record_file, ec);
    if (old)
        return std::move(*old);
    return std::nullopt;
}

// The perf_event cgroup the counters attach to: on v1 its own hierarchy
// (`perf_root`, mounted when no one had), at the job's relative path; the
// processes already in the job's other hierarchies join it, so that work
// started before the sampler is counted too. Recorded in `record`.
void prepare_perf_cgroup(const StartOptions &o, const std::string &relative, const std::string &rel_tail,
                         const Result<fs::path> &perf_root, bool perf_dir_existed,
                         const Result<cgroup::CgroupPaths> &paths, SamplerRecord &record)
{
    {
        if (!perf_root) {
            spdlog::warn("job {}: no perf_event hierarchy ({}); perf counters will not be available", o.job_id,
                         perf_root.error().message());
        } else if (auto dir = cgroup::ensure_job_perf_cgroup(*perf_root, relative); !dir) {
            spdlog::warn("job {}: cannot create its perf_event cgroup: {}", o.job_id, dir.error().message());
        } else {
            record.perf_root = perf_root->string();
            record.perf_cgroup_created = record.perf_cgroup_created || !perf_dir_existed;
        }
    }

    if (!record.perf_root.empty() && paths) {
        const fs::path perf_dir = fs::path(record.perf_root) / rel_tail;
        if (auto moved = cgroup::move_job_procs(*paths, perf_dir); !moved)
            spdlog::warn("job {}: cannot move its running processes into {}: {}", o.job_id, perf_dir.string(),
                         moved.error().message());
        else if (*moved > 0)
            spdlog::info("job {}: {} running processes moved into {}", o.job_id, *moved, perf_dir.string());
    }
}

// colmet-node's command line for the job: what it would not take by itself
// (from its defaults and the same configuration file); the record says
// what is in force either way.
std::vector<std::string> node_command(const StartOptions &o, const fs::path &node, const std::string &relative,
                                      const sched::Placement &place, const spec::JobSpec &spec,
                                      const SamplerRecord &record)
{
    std::vector<std::string> argv = {node.string(), "--job-id", o.job_id,     "--cgroup", relative,
                                     "--user",      o.user,     "--log-file", o.log_file};
    if (spec.period_s || o.period_s > 0)
        argv.insert(argv.end(), {"--sample-period", std::to_string(record.period_s)});
    if (!o.zeromq_uri.empty())
        argv.insert(argv.end(), {"--zeromq-uri", o.zeromq_uri});
    if (o.cgroup_root != k_node_defaults.cgroup_root)
        argv.insert(argv.end(), {"--cgroup-root", o.cgroup_root});
    if (o.run_dir != k_node_defaults.control_dir)
        argv.insert(argv.end(), {"--control-dir", o.run_dir});
    if (!place.level.empty())
        argv.insert(argv.end(), {"--find-cgroup", place.level});
    if (!place.leaves.empty())
        argv.insert(argv.end(), {"--cgroup-leaves", text::join(place.leaves, ",")});
    if (o.config != k_default_config)
        argv.insert(argv.end(), {"--config", o.config});
    if (o.sysfs_root != "/sys")
        argv.insert(argv.end(), {"--sysfs-root", o.sysfs_root});
    if (!o.spool_dir.empty())
        argv.insert(argv.end(), {"--spool-dir", o.spool_dir});
    if (!o.spec.empty() && o.spec != "true")
        argv.insert(argv.end(), {"--meta", "colmet_spec=" + record.spec});
    for (auto &a : context_meta_args(o))
        argv.push_back(std::move(a));
    for (int i = 0; i < o.verbosity + 1 && i < 2; ++i)
        argv.emplace_back("-v");
    for (auto &a : spec::spec_node_args(spec))
        argv.push_back(std::move(a));
    argv.insert(argv.end(), o.node_args.begin(), o.node_args.end());
    return argv;
}

// The record of the sampler about to start; what a dead sampler of the
// same job and cgroup created (`stale`) stays ours to remove.
SamplerRecord new_record(const StartOptions &o, const std::string &relative, const spec::JobSpec &spec,
                         const std::optional<SamplerRecord> &stale)
{
    SamplerRecord record;
    record.job_id = o.job_id;
    record.user = o.user;
    record.cgroup = relative;
    record.cgroup_root = o.cgroup_root;
    record.spec = spec::format_spec(spec);
    record.log_file = o.log_file;
    if (stale && stale->cgroup == relative && stale->cgroup_root == o.cgroup_root) {
        record.job_cgroup_created = stale->job_cgroup_created;
        record.created_from = stale->created_from;
        record.perf_cgroup_created = stale->perf_cgroup_created;
    }
    return record;
}

// For a scheduler without cgroups (--create-cgroup): the job's cgroup when
// it does not exist, with what stop must remove recorded. False when it
// cannot be made (logged).
bool create_missing_cgroup(const StartOptions &o, const cgroup::CgroupFs &cgfs, const std::string &relative,
                           SamplerRecord &record)
{
    auto existing = cgfs.resolve(relative);
    if (existing || existing.error().code() != Errc::not_found)
        return true;
    record.created_from = topmost_missing_ancestor(cgfs, relative);
    if (record.created_from.empty())
        record.created_from = levels_made_by_others(o, relative);
    if (auto made = cgfs.create(relative); !made) {
        spdlog::error("job {}: cannot create cgroup {}: {}", o.job_id, relative, made.error().message());
        return false;
    }
    record.job_cgroup_created = true;
    return true;
}

int do_start(const StartOptions &o)
{
    if (!valid_identifier(o.job_id)) {
        spdlog::error("job id '{}': use 1 to 128 printable ASCII characters without '/'", o.job_id);
        return k_exit_usage;
    }
    if (!valid_user(o.user)) {
        spdlog::error("job {}: user name '{}' is empty, too long, or holds '/', spaces or control characters", o.job_id,
                      o.user);
        return k_exit_usage;
    }
    if (::geteuid() != 0)
        spdlog::warn("job {}: not running as root: cgroups may not be created and the sampler stays in this "
                     "process's cgroups",
                     o.job_id);

    const spec::JobSpec spec = effective_spec(o);

    std::error_code ec;
    fs::create_directories(o.run_dir, ec);
    const fs::path record_file = record_path(o.run_dir, o.job_id);
    bool running = false;
    const std::optional<SamplerRecord> stale = earlier_sampler(o, record_file, running);  // what it made is ours
    if (running)
        return 0;

    cgroup::CgroupFs cgfs(o.cgroup_root);
    auto place = placement(o, cgfs);
    if (!place) {
        spdlog::error("job {}: {}", o.job_id, place.error().message());
        return k_exit_usage;
    }
    const std::string *relative = &place->relative;
    if (o.create_cgroup && place->scheduler_cgroups)
        spdlog::info("job {}: the scheduler makes the job's cgroups here: --create-cgroup makes only colmet's "
                     "perf_event directory",
                     o.job_id);

    SamplerRecord record = new_record(o, *relative, spec, stale);

    // Whether the job's perf_event directory predates us, decided before
    // --create-cgroup (which makes it in every mounted hierarchy, perf_event
    // included): stop removes it only when start made it.
    const bool v1 = cgfs.detect() == cgroup::Version::v1;
    const std::string rel_tail = relative->substr(std::min(relative->size(), relative->find_first_not_of('/')));
    Result<fs::path> perf_root = Error(Errc::unsupported, "cgroup v2: no separate perf_event hierarchy");
    bool perf_dir_existed = false;
    if (v1) {
        perf_root = cgroup::ensure_perf_event_hierarchy(o.cgroup_root);
        if (perf_root)
            perf_dir_existed = fs::is_directory(*perf_root / rel_tail, ec);
    }

    if (!place->scheduler_cgroups && !create_missing_cgroup(o, cgfs, *relative, record))
        return k_exit_failed;

    // The job's own cgroup must exist (the scheduler made it, or
    // --create-cgroup did): a perf_event directory alone is no job. Unless
    // the sampler finds the job's directories from its processes: then the
    // scheduler may make them after this start (Slurm's prolog runs first).
    auto paths = cgfs.resolve(*relative);
    if (paths && paths->version == cgroup::Version::v1 &&
        std::none_of(paths->controllers.begin(), paths->controllers.end(),
                     [](const auto &c) { return c.first != "perf_event"; }))
        paths = Error(Errc::not_found, "cgroup " + *relative + " exists only in the perf_event hierarchy");
    if (!paths && !place->level.empty() && paths.error().code() == Errc::not_found) {
        spdlog::info("job {}: its cgroups do not hold a process yet; the sampler finds them from its first process "
                     "(directories named .../{})",
                     o.job_id, place->level);
    } else if (!paths) {
        spdlog::error("job {}: cannot sample cgroup {}: {}", o.job_id, *relative, paths.error().message());
        (void)remove_created_cgroups(record, o.run_dir);
        return k_exit_failed;
    }

    if (v1)
        prepare_perf_cgroup(o, *relative, rel_tail, perf_root, perf_dir_existed, paths, record);

    const NodeDefaults defaults = read_node_defaults(o.config);
    record.period_s = spec.period_s ? *spec.period_s : o.period_s > 0 ? o.period_s : defaults.period_s;
    record.collector = o.zeromq_uri.empty() ? defaults.uri : o.zeromq_uri;

    fs::path node = o.node_binary.empty() ? find_program("colmet-node") : fs::path(o.node_binary);
    if (node.empty()) {
        spdlog::error("job {}: colmet-node not found next to colmet-job, in the install directories or in PATH",
                      o.job_id);
        (void)remove_created_cgroups(record, o.run_dir);
        return k_exit_failed;
    }
    const std::vector<std::string> argv = node_command(o, node, *relative, *place, spec, record);
    auto pid = spawn_detached(argv, o.cgroup_root);
    if (!pid) {
        spdlog::error("job {}: cannot start {}: {}", o.job_id, node.string(), pid.error().message());
        (void)remove_created_cgroups(record, o.run_dir);
        return k_exit_failed;
    }
    record.pid = *pid;
    record.start_ticks = process_start_ticks(*pid);
    record.started_ns = realtime_ns();
    if (auto w = write_record(record_file, record); !w) {
        spdlog::error("job {}: {}; stopping the sampler it describes", o.job_id, w.error().message());
        ::kill(*pid, SIGTERM);
        (void)remove_created_cgroups(record, o.run_dir);
        return k_exit_failed;
    }
    if (!survives_start(record)) {
        spdlog::error("job {}: colmet-node (pid {}) exited at start; its reason is in {}", o.job_id, *pid, o.log_file);
        fs::remove(record_file, ec);
        (void)remove_created_cgroups(record, o.run_dir);
        return k_exit_failed;
    }
    spdlog::info("job {}: sampler started (pid {}, cgroup {}, every {} s to {}{}{})", o.job_id, *pid, *relative,
                 record.period_s, record.collector, record.spec.empty() ? "" : ", spec ", record.spec);
    return 0;
}

}  // namespace

std::string spool_dir_of(const std::string &given, const std::string &config)
{
    std::string dir = given.empty() ? read_node_defaults(config).spool_dir : given;
    return dir == "none" ? std::string() : dir;
}

void flush_spool_in_background(const std::string &spool_dir, const std::string &config, const std::string &log_file)
{
    if (spool_dir.empty() || !node::spool_has_files(spool_dir))
        return;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        return;
    std::vector<std::string> argv = node::flush_command(self, spool_dir, log_file);
    if (config != k_default_config)
        argv.insert(argv.end(), {"--config", config});
    if (auto pid = spawn_detached(argv, "/sys/fs/cgroup"); pid)
        spdlog::info("the node spool {} holds data: flushing it in the background (pid {})", spool_dir, *pid);
    else
        spdlog::warn("cannot start colmet-job flush-spool: {}", pid.error().message());
}

int start_command(const StartOptions &o)
{
    setup_command_log(o.log_file, o.hook, o.verbosity);
    int rc = 0;
    try {
        rc = do_start(o);  // the sampler it starts flushes the node spool (start_background_flush)
    } catch (const std::exception &e) {
        spdlog::error("job {}: start failed: {}", o.job_id, e.what());
        rc = 70;
    }
    return o.hook ? 0 : rc;
}

CLI::App *add_start_command(CLI::App &app, StartOptions &o)
{
    auto *cmd = app.add_subcommand(
        "start", "Start a detached colmet-node for a scheduler's job (run as root from OAR or Slurm hooks)");
    cmd->add_option("--job-id", o.job_id, "The scheduler's job id (42, 42_3, 42.0)")->required();
    cmd->add_option("--user", o.user, "The job's owner")->required();
    auto *cgroup_opt =
        cmd->add_option("--cgroup", o.cgroup, "The job's cgroup, relative to the hierarchies (/oar/alice_42)");
    auto *find_opt = cmd->add_option(
        "--find-cgroup", o.find_cgroup,
        "With --cgroup: the sampler finds the job's directory in each hierarchy from its processes, the one "
        "named by this level (job_42, job_42/step_0)");
    find_opt->needs(cgroup_opt);
    std::string layouts;
    for (const auto &p : sched::profiles())
        layouts += (layouts.empty() ? "" : "; ") + std::string(p.layout);
    cmd->add_option("--scheduler", o.scheduler,
                    "The scheduler whose hook calls; its layout, unless --cgroup gives the path: " + layouts)
        ->check(CLI::IsMember(sched::profile_names()));
    cmd->add_option("--spec", o.spec,
                    "The user's request: perfhw[:EVENT,...], period=S, " + spec::node_spec_keywords() +
                        " (comma-separated)");
    cmd->add_option("--context", o.context,
                    "KEY=VALUE: what the scheduler says of the job, stored in its file (repeatable; keys: " +
                        sched::context_key_names() + ")")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_option("--zeromq-uri", o.zeromq_uri,
                    "Collector address, or several comma-separated (default: [node] zeromq-uri of the "
                    "config, else tcp://127.0.0.1:5556)")
        ->check(collector_list_check());
    cmd->add_option("-s,--sample-period", o.period_s,
                    "Seconds between samples unless the spec sets it (default: the config's, else 5)")
        ->check(CLI::Range(0.1, 3600.0));
    cmd->add_flag(std::string(spec::k_perfhw_flag), o.enable_perfhw,
                  "Count perf events for every job unless its spec says which");
    cmd->add_option("--perfhw-list", o.perfhw_list, "Events for --enable-perfhw, comma-separated")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_flag("--create-cgroup", o.create_cgroup,
                  "With --cgroup, for schedulers without cgroups: create the job's cgroup (removed again at "
                  "stop); with a scheduler that makes cgroups, only colmet's perf_event directory");
    cmd->add_flag("--hook", o.hook, "Hook mode: always exit 0, log to the log file only");
    cmd->add_option("--run-dir", o.run_dir, "Where the <job>.pid records live")->capture_default_str();
    cmd->add_option("--cgroup-root", o.cgroup_root, "Where the cgroup file systems are mounted")->capture_default_str();
    cmd->add_option("--sysfs-root", o.sysfs_root, "Where sysfs is mounted (perf event names)")->capture_default_str();
    cmd->add_option("--log-file", o.log_file, "Log file of colmet-job and of the sampler it starts")
        ->capture_default_str();
    cmd->add_option("-c,--config", o.config, "colmet.conf to read (passed on to colmet-node)")->capture_default_str();
    cmd->add_option("--spool-dir", o.spool_dir,
                    "The node spool, passed to colmet-node (default: [node] spool-dir of the config, else "
                    "/var/spool/colmet); the sampler flushes spooled data there in the background");
    cmd->add_option("--node-binary", o.node_binary, "colmet-node to run (default: found next to colmet-job)");
    add_verbose_flag(*cmd, o.verbosity);
    cmd->add_option("node-options", o.node_args, "More colmet-node options, after --");
    return cmd;
}

}  // namespace colmet::job
