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
// latest message time seen on the host, then forgotten.
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

    // One message of `job` on `host` at `time_ns`. Returns the overlaps
    // first seen now, each in both directions: {job, other} and {other, job}.
    std::vector<std::pair<std::string, std::string>> observe(const std::string &host, const std::string &job,
                                                             wire::MessageKind kind, int64_t time_ns);

    // Forget a job on every host (the sink forgot the job after a long silence).
    void forget(const std::string &job);

    // Jobs currently tracked on a host (for tests).
    size_t tracked(const std::string &host) const;

private:
    struct Interval {
        int64_t start_ns = 0;
        bool ended = false;
        int64_t end_ns = 0;
        std::set<std::string> overlaps;  // already reported
    };
    struct Host {
        std::map<std::string, Interval> jobs;
        int64_t latest_ns = 0;
    };
    std::map<std::string, Host> m_hosts;
};

} // namespace colmet::collector::hdf5
