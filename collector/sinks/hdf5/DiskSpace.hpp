// Free space of the file system that holds the HDF5 files, and whether the
// sink may write there: writing pauses when less than min_free_bytes are
// free and resumes once free space is back above min_free_bytes plus a
// margin (a quarter of it, at most 64 MiB), so that a disk hovering at the
// threshold does not make the sink flap. One log line when writing pauses,
// one when it resumes.
//
//   DiskSpace space(dir, 64 << 20);
//   if (space.check()) ... write ...;   // statvfs(dir) each call
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

namespace colmet::collector::hdf5 {

class DiskSpace {
public:
    // Bytes available to the collector under `dir`; nullopt when unknown.
    using Probe = std::function<std::optional<uint64_t>(const std::filesystem::path &dir)>;

    // probe: how free space is measured (tests); empty: statvfs(dir).
    DiskSpace(std::filesystem::path dir, uint64_t min_free_bytes, Probe probe = {});

    // Measure now; false while writing is paused. Unknown free space (the
    // directory is gone: opening files will fail and say so) never pauses.
    bool check();
    bool paused() const { return m_paused; }
    uint64_t pauses() const { return m_pauses; }
    uint64_t min_free_bytes() const { return m_min_free; }
    uint64_t resume_bytes() const { return m_min_free + m_margin; }

private:
    std::filesystem::path m_dir;
    uint64_t m_min_free;
    uint64_t m_margin;
    Probe m_probe;
    bool m_paused = false;
    uint64_t m_pauses = 0;
};

// statvfs(dir): f_bavail * f_frsize, or nullopt.
std::optional<uint64_t> free_bytes(const std::filesystem::path &dir);

}  // namespace colmet::collector::hdf5
