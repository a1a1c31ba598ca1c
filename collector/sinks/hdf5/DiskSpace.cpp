#include "collector/sinks/hdf5/DiskSpace.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sys/statvfs.h>

namespace colmet::collector::hdf5 {

namespace {

constexpr uint64_t k_max_margin = 64ULL << 20;

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

std::optional<uint64_t> free_bytes(const std::filesystem::path &dir)
{
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0)
        return std::nullopt;
    return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

DiskSpace::DiskSpace(std::filesystem::path dir, uint64_t min_free_bytes, Probe probe)
    : m_dir(std::move(dir)), m_min_free(min_free_bytes), m_margin(std::min(min_free_bytes / 4, k_max_margin)),
      m_probe(std::move(probe))
{
}

bool DiskSpace::check()
{
    if (m_min_free == 0)
        return true;
    auto free = m_probe ? m_probe(m_dir) : free_bytes(m_dir);
    if (!free)
        return !m_paused;
    if (!m_paused && *free < m_min_free) {
        m_paused = true;
        ++m_pauses;
        spdlog::warn("hdf5: {} has {} free, less than the {} kept free (--min-free-space): writing paused, rows "
                     "stay in memory up to --memory-budget, then are dropped and counted",
                     m_dir.string(), mib(*free), mib(m_min_free));
    } else if (m_paused && *free >= resume_bytes()) {
        m_paused = false;
        spdlog::warn("hdf5: {} has {} free again: writing resumed", m_dir.string(), mib(*free));
    }
    return !m_paused;
}

}  // namespace colmet::collector::hdf5
