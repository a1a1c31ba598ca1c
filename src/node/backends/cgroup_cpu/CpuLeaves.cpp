#include "node/backends/cgroup_cpu/CpuLeaves.hpp"

#include "cgroup/ProcCgroup.hpp"
#include "common/file_io.hpp"
#include "common/text.hpp"

#include <cerrno>

#include <glob.h>

namespace colmet::node::backends {

namespace fs = std::filesystem;

CpuLeaves::CpuLeaves(fs::path dir, const std::vector<std::string> &patterns) : m_dir(std::move(dir))
{
    for (const auto &pattern : patterns)
        if (auto parts = cgroup::parse_level(pattern))
            m_patterns.push_back(text::join(*parts, "/"));
}

CpuLeaves::Sum CpuLeaves::read(StatusText &problems)
{
    for (const auto &pattern : m_patterns) {
        glob_t g{};
        const std::string full = (m_dir / pattern).string();
        if (glob(full.c_str(), GLOB_ONLYDIR | GLOB_NOSORT, nullptr, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; ++i) {
                std::string leaf = g.gl_pathv[i];
                auto text = read_file(fs::path(leaf) / "cpu.stat");
                if (!text) {
                    // Removed between glob and read: the last value stands.
                    if (text.error().sys_errno() != ENOENT && text.error().sys_errno() != ENODEV)
                        problems.item("cpu.stat of a leaf: ").add(text.error().message());
                    continue;
                }
                auto st = parse_v2_cpu_stat(*text);
                if (!st) {
                    problems.item("cpu.stat of a leaf: ").add(st.error().message());
                    continue;
                }
                if (!st->usage_usec) {
                    problems.item("cpu.stat of a leaf: no usage_usec in ").add(leaf);
                    continue;
                }
                m_last[leaf] = *st;
            }
        }
        globfree(&g);
    }
    Sum sum;
    for (const auto &[leaf, st] : m_last) {
        sum.usage_usec += st.usage_usec.value_or(0);
        sum.user_usec += st.user_usec.value_or(0);
        sum.system_usec += st.system_usec.value_or(0);
    }
    return sum;
}

}  // namespace colmet::node::backends
