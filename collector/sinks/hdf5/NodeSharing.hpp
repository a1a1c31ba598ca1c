// Which colmet jobs ran on each host, and when: node-scope backends (RAPL,
// temperature, InfiniBand, Lustre) measure the whole node, so a job file
// must say which other jobs shared the node while it ran. The HDF5 sink
// feeds every message here and records the pairs it returns in the
// overlapping_jobs attribute of each job's host group.
//
// A job's interval on a host opens at its job_start (or, when that never
// arrived, at its first message) and closes at its job_end; until then it
// is open. Two jobs overlap on a host when their intervals intersect. Times
// are the samplers' CLOCK_REALTIME, so the order in which messages arrive
// does not matter. Ended intervals are kept for k_retention_ns after the
// latest message time seen on the host, and at most k_max_ended per host
// (the most recently ended ones), then forgotten: what a new job costs
// depends on how many jobs run on its host now, not on how many ran there
// before.
#pragma once

#include "wire/message.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace colmet::collector::hdf5 {

class NodeSharing {
public:
    static constexpr int64_t k_retention_ns = 3600LL * 1'000'000'000;  // one hour
    static constexpr size_t k_max_ended = 64;                          // ended intervals kept per host

    // One message of `job` on `host` at `time_ns`. Returns the overlaps
    // first seen now, each in both directions: {job, other} and {other, job}.
    std::vector<std::pair<std::string, std::string>> observe(const std::string &host, const std::string &job,
                                                             wire::MessageKind kind, int64_t time_ns);

    // Forget a job on every host (the sink forgot the job after a long silence).
    void forget(const std::string &job);

    // Jobs currently tracked on a host (for tests).
    size_t tracked(const std::string &host) const;

    // An estimate of the memory this holds, for the sink's budget.
    size_t memory_bytes() const { return m_bytes; }

private:
    struct Interval {
        int64_t start_ns = 0;
        bool ended = false;
        int64_t end_ns = 0;
        std::set<std::string> overlaps;  // already reported
        size_t bytes = 0;                // counted in m_bytes
    };
    struct Host {
        std::map<std::string, Interval> jobs;
        int64_t latest_ns = 0;
        size_t ended = 0;  // intervals of `jobs` that ended
    };
    using HostMap = std::map<std::string, Host>;

    void add_overlap(Interval &interval, const std::string &other);
    void erase(Host &host, std::map<std::string, Interval>::iterator it);
    void prune(Host &host);

    HostMap m_hosts;
    size_t m_bytes = 0;
};

}  // namespace colmet::collector::hdf5
