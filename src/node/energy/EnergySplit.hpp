// How the energy a node used over an interval is shared between the jobs
// that ran on it (the method of colmet-node(8), "Energy per job", after
// CEEMS and Alumet):
//
//   u       = the node's busy CPU time / (its CPUs x the interval), within [0, 1]
//   job k   = E x ((1 - u) x a_k / N  +  u x c_k / C)
//   idle    = E x ((1 - u) x (N - A) / N  +  u x (C - sum c) / C)
//
// E: the energy of one RAPL domain over the interval; N: the node's CPUs;
// a_k: job k's allocated CPUs (A their sum); c_k: its CPU time (cgroup);
// C: the node's busy CPU time (/proc/stat). The idle baseline, (1 - u) of
// E, is shared by allocated CPUs (what a job holds keeps others off those
// CPUs); the rest by CPU time. The idle part is what no job is charged:
// the baseline of unallocated CPUs and the CPU time outside jobs (system
// daemons, the kernel). Jobs plus idle make E exactly: when the jobs hold
// more CPUs than the node has, or their CPU time exceeds the node's (reads
// a few ms apart), N and C are raised to those sums.
#pragma once

#include <span>
#include <vector>

namespace colmet::node::energy {

struct NodeInterval {
    double energy_j = 0;    // E
    double seconds = 0;     // the interval's length
    double busy_cpu_s = 0;  // C
    double cpus = 0;        // N
};

struct JobInterval {
    double cpu_s = 0;           // c_k
    double allocated_cpus = 0;  // a_k
};

struct EnergySplit {
    std::vector<double> jobs;  // in the order given
    double idle_j = 0;
    double utilisation = 0;  // u
};

// NaN in, NaN out (for the values that depend on it).
EnergySplit split_energy(const NodeInterval &node, std::span<const JobInterval> jobs);

}  // namespace colmet::node::energy
