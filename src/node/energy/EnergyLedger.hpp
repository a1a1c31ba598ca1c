// The node's energy ledger: one file per node that every job's sampler
// advances, so that the shares of all the jobs on the node and the idle part
// add up to the node's energy exactly (colmet-node(8), "Energy per job").
//
// Each sampler, at each of its samples, takes the ledger's lock and, under
// it, reads the node once: every RAPL domain's energy counter, /proc/stat,
// and the CPU time of every job in the ledger (from its cgroup, described by
// its entry). The energy since the ledger's last update, whoever made it, is
// split between the jobs that were in the ledger by EnergySplit.hpp, and
// each job's share, the idle part and the node's total grow by their parts
// of one and the same interval. A job that ends leaves the ledger and its
// share goes to `retired`; so at every update, per domain:
//
//   energy = idle + retired + the sum of the jobs' shares
//
// (up to the rounding of a few additions). A job whose sampler died, or
// whose cgroup can no longer be read, is retired by the next update.
//
// This header holds the ledger's state and its text form (pure, no I/O);
// LedgerFile.hpp reads, locks and writes it.
//
// The text form, one record per line, its fields separated by tabs (shown
// here as spaces):
//   colmet-energy-ledger 1
//   start <ns> time <ns> busy <s> cpus <n>
//   domain <metric> <energy_uj file> <raw uj> <max range uj> <energy J>
//          <idle J> <retired J>
//   job <id> <pid> <allocated cpus> <cpu s> <v1|v2> <cgroup dir>
//       <leaves, comma-separated, or -> <share J>...
// (a share per domain, in the domains' order; a record is one line). Paths
// and ids may hold no tab or newline; the ledger refuses such a job.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::node::energy {

struct LedgerDomain {
    std::string metric;  // the rapl backend's metric ("package_0_package")
    std::string file;    // its energy_uj
    uint64_t raw_uj = 0;
    uint64_t max_range_uj = 0;
    double energy_j = 0;   // the node's energy since the ledger started
    double idle_j = 0;     // what no job was charged
    double retired_j = 0;  // the shares of the jobs that left
};

// Where a job's CPU time is read: its cgroup v1 cpuacct directory, or its
// cgroup v2 directory and the leaves below it that hold its own work.
struct LedgerCpuSource {
    bool v2 = false;
    std::string dir;
    std::vector<std::string> leaves;

    bool operator==(const LedgerCpuSource &) const = default;
};

struct LedgerJob {
    std::string id;
    int64_t pid = 0;  // its sampler
    double allocated_cpus = 0;
    double cpu_s = 0;  // its CPU time at the last update
    LedgerCpuSource cpu;
    std::vector<double> shares_j;  // one per domain
};

struct LedgerState {
    int64_t start_ns = 0;  // 0: nothing recorded yet
    int64_t time_ns = 0;   // the last update
    double busy_s = 0;     // the node's busy CPU time then (/proc/stat)
    double cpus = 0;
    std::vector<LedgerDomain> domains;
    std::vector<LedgerJob> jobs;

    LedgerJob *find(std::string_view id, int64_t pid);
};

// Errc::parse with the line's number and what is wrong.
Result<LedgerState> parse_ledger(std::string_view text);
std::string format_ledger(const LedgerState &state);

// Whether a job's id and CPU source can be written (no tab, newline or
// comma where they would end a field). Errc::invalid otherwise.
Result<void> check_ledger_job(std::string_view id, const LedgerCpuSource &cpu);

// What the node read at one update, under the lock.
struct NodeReading {
    int64_t time_ns = 0;
    std::vector<uint64_t> raw_uj;  // per domain; a domain not read keeps the ledger's value
    std::vector<bool> have_raw;
    double busy_s = 0;
    double cpus = 0;
    std::vector<double> job_cpu_s;  // per job of the state (NaN: retire it)
};

// Advance the ledger to `now`: the energy of each domain since the last
// update (a counter below its last value wrapped once: max range added)
// split between the jobs in it, then the jobs whose CPU time is NaN retired.
// The first update only records the readings.
void advance_ledger(LedgerState &state, const NodeReading &now);

// Move a job's shares to `retired` and drop it.
void retire_job(LedgerState &state, size_t index);

}  // namespace colmet::node::energy
