#include "scheduler/SlurmLayout.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace colmet::sched::slurm {

namespace fs = std::filesystem;

namespace {

std::optional<uint32_t> parse_u32(std::string_view s)
{
    if (s.empty() || s.size() > 10 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    uint32_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::string tail(const SamplerRef &ref)
{
    std::string out = "job_" + std::to_string(ref.job);
    if (ref.step)
        out += "/step_" + std::to_string(*ref.step);
    return out;
}

bool is_dir(const fs::path &p)
{
    std::error_code ec;
    return fs::is_directory(p, ec);
}

}  // namespace

std::string sampler_id(const SamplerRef &ref)
{
    return std::to_string(ref.job) + (ref.step ? "." + std::to_string(*ref.step) : std::string());
}

std::optional<SamplerRef> parse_sampler_id(std::string_view id)
{
    SamplerRef ref;
    auto dot = id.find('.');
    auto job = parse_u32(id.substr(0, dot));
    if (!job)
        return std::nullopt;
    ref.job = *job;
    if (dot != std::string_view::npos) {
        auto step = parse_u32(id.substr(dot + 1));
        if (!step)
            return std::nullopt;
        ref.step = *step;
    }
    return ref;
}

std::string level(const SamplerRef &ref) { return tail(ref); }

std::string perf_cgroup(uid_t uid, const SamplerRef &ref)
{
    return "/slurm/uid_" + std::to_string(uid) + "/" + tail(ref);
}

std::string v2_cgroup(const fs::path &root, const SamplerRef &ref)
{
    std::vector<std::string> scopes;
    std::error_code ec;
    for (fs::directory_iterator it(root / "system.slice", ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (name.ends_with("_slurmstepd.scope") && it->is_directory(ec))
            scopes.push_back(name);
    }
    std::sort(scopes.begin(), scopes.end());
    scopes.push_back("slurmstepd.scope");
    for (const auto &scope : scopes)
        if (is_dir(root / "system.slice" / scope / tail(ref)))
            return "/system.slice/" + scope + "/" + tail(ref);
    for (const auto &scope : scopes)
        if (is_dir(root / "system.slice" / scope))
            return "/system.slice/" + scope + "/" + tail(ref);
    return "/system.slice/slurmstepd.scope/" + tail(ref);
}

std::vector<std::string> v2_task_leaves(const SamplerRef &ref) { return {ref.step ? "user" : "step_*/user"}; }

std::optional<fs::path> manages_cgroups(const fs::path &root, const std::vector<std::string> &made_by_colmet)
{
    std::error_code ec;
    for (fs::directory_iterator h(root, ec), end; !ec && h != end; h.increment(ec)) {
        const std::string hierarchy = h->path().filename().string();
        std::error_code ec2;
        if (hierarchy == "perf_event" || hierarchy == "unified" || !is_dir(h->path()) ||
            !fs::exists(h->path() / "cgroup.procs", ec2))
            continue;
        for (fs::directory_iterator d(h->path(), ec2); !ec2 && d != end; d.increment(ec2)) {
            const std::string name = d->path().filename().string();
            if (name != "slurm" && !name.starts_with("slurm_"))
                continue;
            if (!d->is_directory(ec2))
                continue;
            if (std::find(made_by_colmet.begin(), made_by_colmet.end(), "/" + name) == made_by_colmet.end())
                return d->path();
        }
    }
    return std::nullopt;
}

}  // namespace colmet::sched::slurm
