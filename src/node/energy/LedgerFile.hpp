// The node's energy ledger on disk (EnergyLedger.hpp says what it holds):
// one sampler's update of it, under an exclusive lock on <ledger>.lock.
// Under the lock it reads the ledger, the node's RAPL counters, /proc/stat
// and the CPU time of every job in it (each job's cgroup_cpu backend,
// built from its entry and kept), advances it, registers this sampler's job
// the first time, takes it out at the job's end, and writes it back whole,
// in place (readers hold the lock too).
//
// A ledger that cannot be parsed is started afresh (the jobs in it come
// back at their next update, each keeping what it had been charged, see
// EnergyShareBackend). A ledger of other RAPL files (another sysfs tree) is
// left alone while a sampler in it lives, and replaced otherwise.
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "node/MetricBackend.hpp"
#include "node/backends/support/NumberFile.hpp"
#include "node/backends/support/StatusText.hpp"
#include "node/energy/EnergyLedger.hpp"
#include "node/energy/ProcStat.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace colmet::node::energy {

// One RAPL domain as the ledger reads it.
struct LedgerCounter {
    std::string metric;
    std::filesystem::path energy_file;  // powercap energy_uj
    uint64_t max_range_uj = 0;
};

// This sampler's job, as the ledger lists it.
struct LedgerSelf {
    std::string id;
    int64_t pid = 0;
    double allocated_cpus = 0;
    LedgerCpuSource cpu;
};

// What one update gives the sampler.
struct LedgerView {
    std::vector<double> shares_j;  // this job's, per domain, since it entered the ledger
    bool entered = false;          // it entered at this update (shares 0)
    double busy_s = 0;             // the node's, at this update
    double cpus = 0;
    double utilisation = 0;  // of the interval just split (0 at the first)
    size_t jobs = 0;         // jobs in the ledger after the update
};

class LedgerFile {
public:
    LedgerFile(std::filesystem::path path, std::vector<LedgerCounter> counters, const std::filesystem::path &proc_root);

    const std::filesystem::path &path() const { return m_path; }

    // Advance the ledger now (CLOCK_REALTIME), with `self` in it; `leaving`:
    // the job ends, its shares are read and it leaves. Errors (the lock, the
    // file, a ledger of other counters still in use) with their context;
    // what could not be read is also added to `problems`.
    Result<LedgerView> update(const LedgerSelf &self, bool leaving, backends::StatusText &problems);

    // Take `self` out of the ledger, if it is in it (a sampler stopping
    // without a job end).
    void leave(const LedgerSelf &self);

private:
    Result<UniqueFd> lock();
    Result<LedgerState> load(backends::StatusText &problems);
    Result<void> store(const LedgerState &state);
    bool same_counters(const LedgerState &state) const;
    double read_cpu(const LedgerJob &job, backends::StatusText &problems);

    std::filesystem::path m_path;
    std::vector<LedgerCounter> m_counters;
    std::vector<backends::NumberFile> m_files;
    ProcStat m_stat;
    // Each job's cgroup_cpu backend, by cgroup directory, built once.
    std::map<std::string, std::unique_ptr<MetricBackend>> m_cpu_readers;
    std::vector<double> m_cpu_values;
};

}  // namespace colmet::node::energy
