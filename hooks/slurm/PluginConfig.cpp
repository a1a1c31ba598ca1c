#include "PluginConfig.hpp"

#include "SpecCheck.hpp"
#include "common/collectors.hpp"

#include <array>
#include <cstdlib>
#include <set>

namespace colmet::spank {

namespace {

constexpr std::array<ConfigKey, 14> k_keys{{
    {"collector", "URI[,URI...]", "collector address(es) given to colmet-job --zeromq-uri"},
    {"metrics", "SPEC", "what a bare --colmet samples (same grammar as --colmet=SPEC)"},
    {"period", "SECONDS", "default seconds between samples (0.1 to 3600)"},
    {"cgroup_root", "DIR", "where the cgroup file systems are mounted"},
    {"mode", "opt-in|all", "all samples every job (site mode); opt-in only jobs with --colmet"},
    {"run_dir", "DIR", "colmet-job --run-dir; the plugin keeps its job markers there too"},
    {"colmet_job", "PATH", "the colmet-job helper to run"},
    {"colmet_ctl", "PATH", "the colmet-ctl to run when a step ends (a last sample of the job)"},
    {"log_file", "FILE", "colmet-job --log-file (default: colmet-job's own)"},
    {"spool_dir", "DIR", "colmet-job --spool-dir, the node spool (default: colmet.conf's, else /var/spool/colmet)"},
    {"steps", "yes|no", "also run one sampler per srun step, job id <job>.<step>"},
    {"timeout", "SECONDS", "longest a colmet-job call may run before it is killed (1 to 60)"},
    {"summary_dir", "DIR", "where srun's host sees the collector's job files: srun --colmet prints its summary"},
    {"summary_wait", "SECONDS", "how long srun waits for that summary (0 to 60)"},
}};

std::string known_keys()
{
    std::string out;
    for (const auto &k : k_keys) {
        if (!out.empty())
            out += ", ";
        out += k.name;
    }
    return out;
}

std::optional<double> parse_seconds(std::string_view v)
{
    if (v.empty() || v.size() > 32)
        return std::nullopt;
    std::string s(v);
    char *end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size())
        return std::nullopt;
    return d;
}

std::optional<bool> parse_bool(std::string_view v)
{
    if (v == "yes" || v == "true" || v == "1")
        return true;
    if (v == "no" || v == "false" || v == "0")
        return false;
    return std::nullopt;
}

Result<void> check_absolute(std::string_view key, std::string_view v)
{
    if (v.empty() || v.front() != '/')
        return Error::invalid(std::string(key) + "=" + std::string(v) + ": must be an absolute path");
    return ok();
}

Result<void> set_key(PluginConfig &c, std::string_view key, std::string_view v)
{
    auto bad = [&](std::string_view why) {
        return Error::invalid(std::string(key) + "=" + std::string(v) + ": " + std::string(why));
    };
    if (key == "collector") {
        if (auto list = parse_collector_list(v); !list)
            return bad(list.error().message());
        c.collector = v;
    } else if (key == "metrics") {
        if (auto err = spec_error(v))
            return bad(*err);
        c.metrics = v;
    } else if (key == "period") {
        auto d = parse_seconds(v);
        if (!d || *d < 0.1 || *d > 3600)
            return bad("expected seconds between 0.1 and 3600");
        c.period = *d;
    } else if (key == "cgroup_root") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.cgroup_root = v;
    } else if (key == "mode") {
        if (v == "opt-in")
            c.mode = Mode::opt_in;
        else if (v == "all")
            c.mode = Mode::all;
        else
            return bad("expected opt-in or all");
    } else if (key == "run_dir") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.run_dir = v;
    } else if (key == "colmet_job") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.colmet_job = v;
    } else if (key == "colmet_ctl") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.colmet_ctl = v;
    } else if (key == "log_file") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.log_file = v;
    } else if (key == "spool_dir") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.spool_dir = v;
    } else if (key == "summary_dir") {
        if (auto r = check_absolute(key, v); !r)
            return r.error();
        c.summary_dir = v;
    } else if (key == "summary_wait") {
        auto d = parse_seconds(v);
        if (!d || *d < 0 || *d > 60)
            return bad("expected seconds between 0 and 60");
        c.summary_wait = *d;
    } else if (key == "steps") {
        auto b = parse_bool(v);
        if (!b)
            return bad("expected yes or no");
        c.steps = *b;
    } else if (key == "timeout") {
        auto d = parse_seconds(v);
        if (!d || *d < 1 || *d > 60)
            return bad("expected seconds between 1 and 60");
        c.timeout = *d;
    } else {
        return Error::invalid("unknown plugstack.conf argument '" + std::string(key) + "' (known: " + known_keys() +
                              ")");
    }
    return ok();
}

}  // namespace

std::span<const ConfigKey> config_keys() { return k_keys; }

Result<PluginConfig> parse_config(std::span<const std::string_view> args, std::string default_colmet_job,
                                  std::string default_colmet_ctl)
{
    PluginConfig c;
    c.colmet_job = std::move(default_colmet_job);
    c.colmet_ctl = std::move(default_colmet_ctl);
    std::set<std::string_view> seen;
    for (std::string_view arg : args) {
        auto eq = arg.find('=');
        if (eq == std::string_view::npos || eq == 0)
            return Error::invalid("plugstack.conf argument '" + std::string(arg) +
                                  "' is not key=value (known keys: " + known_keys() + ")");
        std::string_view key = arg.substr(0, eq);
        if (!seen.insert(key).second)
            return Error::invalid("plugstack.conf argument '" + std::string(key) + "' is given twice");
        if (auto r = set_key(c, key, arg.substr(eq + 1)); !r)
            return r.error();
    }
    return c;
}

Result<PluginConfig> parse_config(int argc, char **argv, std::string default_colmet_job, std::string default_colmet_ctl)
{
    std::vector<std::string_view> args;
    for (int i = 0; i < argc && argv != nullptr; ++i)
        if (argv[i] != nullptr)
            args.emplace_back(argv[i]);
    return parse_config(args, std::move(default_colmet_job), std::move(default_colmet_ctl));
}

}  // namespace colmet::spank
