#include "node/backends/lustre/LustreBackend.hpp"

#include "common/text.hpp"
#include "node/backends/BackendFactory.hpp"
#include "node/backends/support/next_token.hpp"
#include "node/backends/support/sysfs_names.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <system_error>

namespace colmet::node::backends::lustre {
namespace {

enum : size_t { k_read_calls, k_read_bytes, k_write_calls, k_write_bytes, k_first_op };
constexpr size_t k_totals = 4;  // the first four, summed over mounts

bool is_hex(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
}

// "scratch-ffff8881234abcd0" -> "scratch"
std::string fs_name(const std::string &dir)
{
    auto dash = dir.rfind('-');
    if (dash != std::string::npos && dash > 0 && dir.size() - dash - 1 >= 8 && is_hex(dir.substr(dash + 1)))
        return dir.substr(0, dash);
    return dir;
}

}  // namespace

Result<void> parse_llite_stats(std::string_view text, MountValues &out)
{
    out.fill(0);
    for (std::string_view line : text::Lines(text)) {
        std::string_view rest = line;
        std::string_view name = next_token(rest);
        size_t index = 0;
        bool bytes = false;
        if (name == "read_bytes" || name == "write_bytes") {
            index = name == "read_bytes" ? k_read_calls : k_write_calls;
            bytes = true;
        } else {
            auto it = std::find(k_lustre_ops.begin(), k_lustre_ops.end(), name);
            if (it == k_lustre_ops.end())
                continue;
            index = k_first_op + static_cast<size_t>(it - k_lustre_ops.begin());
        }
        auto count = text::parse_u64(next_token(rest));
        if (!count)
            return Error::parse(std::string(name) + ": bad sample count");
        out[index] = static_cast<double>(*count);
        if (!bytes)
            continue;
        // "samples [bytes] <min> <max> <sum> [<sumsq>]": the sum is the 7th field.
        std::string_view field;
        for (int k = 0; k < 5; ++k)
            field = next_token(rest);
        auto sum = text::parse_u64(field);
        if (!sum)
            return Error::parse(std::string(name) + ": no byte sum");
        out[index + 1] = static_cast<double>(*sum);
    }
    return ok();
}

std::vector<Mount> find_mounts(const std::filesystem::path &proc_root, const std::filesystem::path &sysfs_root)
{
    std::vector<std::pair<std::string, std::filesystem::path>> found;  // dir name, stats
    for (const auto &root : {proc_root / "fs/lustre/llite", sysfs_root / "kernel/debug/lustre/llite"}) {
        for (const auto &dir : subdirectories(root)) {
            std::error_code ec;
            if (!std::filesystem::exists(root / dir / "stats", ec))
                continue;
            if (std::none_of(found.begin(), found.end(), [&](const auto &f) { return f.first == dir; }))
                found.emplace_back(dir, root / dir / "stats");
        }
    }
    std::sort(found.begin(), found.end());
    std::map<std::string, int> uses;
    for (const auto &f : found)
        ++uses[metric_part(fs_name(f.first))];
    std::vector<Mount> out;
    for (const auto &[dir, stats] : found) {
        std::string label = metric_part(fs_name(dir));
        if (uses[label] > 1)
            label = metric_part(dir);
        out.push_back({label, stats});
    }
    return out;
}

LustreBackend::LustreBackend(std::vector<Mount> mounts) : m_mounts(std::move(mounts))
{
    using wire::MetricKind;
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> k_first = {
        {{"read_calls", "1"}, {"read_bytes", "B"}, {"write_calls", "1"}, {"write_bytes", "B"}}};
    for (const auto &m : m_mounts) {
        for (auto [what, unit] : k_first)
            m_metrics.push_back({m.label + "." + std::string(what), std::string(unit), MetricKind::counter});
        for (auto op : k_lustre_ops)
            m_metrics.push_back({m.label + "." + std::string(op), "1", MetricKind::counter});
        m_files.emplace_back(m.stats.parent_path(), "stats");
    }
    for (auto [what, unit] : k_first)
        m_metrics.push_back({std::string(what), std::string(unit), MetricKind::counter});
}

void LustreBackend::sample(std::span<double> values) noexcept
{
    constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
    m_problems.clear();
    if (values.size() != m_metrics.size())
        return;
    const size_t totals = m_mounts.size() * k_per_mount;
    for (size_t t = 0; t < k_totals; ++t)
        values[totals + t] = 0;
    for (size_t m = 0; m < m_mounts.size(); ++m) {
        auto out = values.subspan(m * k_per_mount, k_per_mount);
        std::string_view text;
        MountValues parsed;
        bool good = m_files[m].read(text, m_problems);
        if (good) {
            if (auto r = parse_llite_stats(text, parsed); !r) {
                m_problems.item(m_mounts[m].label).add(": ").add(r.error().message());
                good = false;
            }
        }
        for (size_t k = 0; k < k_per_mount; ++k)
            out[k] = good ? parsed[k] : k_nan;
        for (size_t t = 0; t < k_totals; ++t)
            values[totals + t] += out[t];  // NaN as soon as one mount is unreadable
    }
    set_status(m_problems.view());
}

Result<std::unique_ptr<MetricBackend>> make_lustre_backend(const NodeContext &ctx)
{
    auto mounts = find_mounts(ctx.proc_root, ctx.sysfs_root);
    if (mounts.empty())
        return Error(Errc::not_found, "no Lustre client mount (" + (ctx.proc_root / "fs/lustre/llite").string() + ", " +
                                          (ctx.sysfs_root / "kernel/debug/lustre/llite").string() + ")");
    return std::unique_ptr<MetricBackend>(std::make_unique<LustreBackend>(std::move(mounts)));
}

}  // namespace colmet::node::backends::lustre

namespace colmet::node::backends {

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_lustre_factory;
constexpr BackendFactory k_lustre_factory =
    node_backend_factory(*spec::backend_info("lustre"), &lustre::make_lustre_backend);

}  // namespace colmet::node::backends
