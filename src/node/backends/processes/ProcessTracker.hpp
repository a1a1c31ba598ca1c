// Job-wide process accounting from per-process observations: counts, and
// cumulative I/O that survives the exit of processes. Pure: no I/O.
//
// A process is (pid, starttime): a pid seen again with another starttime is
// a new process and the old one has exited. When a process disappears:
//   - if its parent (last ppid seen) is alive in the job, nothing is added:
//     the kernel adds a reaped child's I/O to its parent's /proc/<pid>/io;
//   - otherwise its last values go to the "exited" accumulator.
// Totals = exited + sum over live processes, kept monotonic (a child that
// exited but is not yet reaped by its parent would otherwise dip the total).
// What the kernel does not keep is lost: a child reaped by a process outside
// the job, or auto-reaped because its parent ignores SIGCHLD.
#pragma once

#include "node/backends/processes/proc_parsers.hpp"

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace colmet::node::backends {

struct ProcObservation {
    pid_t pid = 0;
    pid_t ppid = 0;
    uint64_t starttime = 0;
    uint64_t threads = 0;
    bool io_read = false;  // false: /proc/<pid>/io could not be read this time
    ProcIo io{};
};

class ProcessTracker {
public:
    // `expected`: processes to reserve room for (more only cost an allocation).
    explicit ProcessTracker(size_t expected = 64);

    // One sample: begin(), observe() each live process, end().
    void begin() noexcept { m_next.clear(); }
    // Allocates only when more processes are alive than ever before.
    void observe(const ProcObservation &p) { m_next.push_back(Entry{p, p.io_read}); }
    void end() noexcept;

    uint64_t processes() const { return m_live.size(); }
    uint64_t threads() const { return m_threads; }
    // True when the I/O of every live process was read in the last sample;
    // otherwise io_totals() was not updated.
    bool io_complete() const { return m_io_complete; }
    const ProcIo &io_totals() const { return m_reported; }
    const ProcIo &exited() const { return m_exited; }

private:
    struct Entry {
        ProcObservation p;
        bool has_io = false;  // p.io holds the last values read (this or an earlier sample)
    };
    bool alive_now(pid_t pid) const noexcept;
    void settle(const Entry &gone) noexcept;

    std::vector<Entry> m_live;  // previous sample, sorted by pid
    std::vector<Entry> m_next;  // the sample being observed
    ProcIo m_exited{};
    ProcIo m_reported{};
    uint64_t m_threads = 0;
    bool m_io_complete = true;
};

}  // namespace colmet::node::backends
