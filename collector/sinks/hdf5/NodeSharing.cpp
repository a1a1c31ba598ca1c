#include "collector/sinks/hdf5/NodeSharing.hpp"

#include <algorithm>
#include <limits>

namespace colmet::collector::hdf5 {

std::vector<std::pair<std::string, std::string>> NodeSharing::observe(const std::string &host_name,
                                                                      const std::string &job,
                                                                      wire::MessageKind kind, int64_t time_ns)
{
    Host &host = m_hosts[host_name];
    host.latest_ns = std::max(host.latest_ns, time_ns);
    auto [it, added] = host.jobs.try_emplace(job);
    Interval &mine = it->second;
    // Only a change of the interval can reveal a new overlap: the steady
    // stream of samples of a running job costs one lookup, however many
    // jobs share the host.
    bool changed = added;
    if (!added && time_ns < mine.start_ns) {
        mine.start_ns = time_ns;
        changed = true;
    }
    if (added)
        mine.start_ns = time_ns;
    if (kind == wire::MessageKind::job_end) {
        changed = changed || !mine.ended || mine.end_ns != time_ns;
        mine.ended = true;
        mine.end_ns = time_ns;
    } else if (mine.ended && time_ns > mine.end_ns) {
        mine.ended = false;  // a new sampler for the same job id (restarted)
        changed = true;
    }
    if (!changed)
        return {};

    constexpr int64_t k_open = std::numeric_limits<int64_t>::max();
    std::vector<std::pair<std::string, std::string>> found;
    const int64_t my_end = mine.ended ? mine.end_ns : k_open;
    for (auto &[other_id, other] : host.jobs) {
        if (other_id == job || mine.overlaps.count(other_id) != 0)
            continue;
        const int64_t other_end = other.ended ? other.end_ns : k_open;
        if (mine.start_ns <= other_end && other.start_ns <= my_end) {
            mine.overlaps.insert(other_id);
            other.overlaps.insert(job);
            found.emplace_back(job, other_id);
            found.emplace_back(other_id, job);
        }
    }
    // Forget what ended long ago.
    for (auto j = host.jobs.begin(); j != host.jobs.end();) {
        if (j->second.ended && host.latest_ns - j->second.end_ns > k_retention_ns)
            j = host.jobs.erase(j);
        else
            ++j;
    }
    return found;
}

void NodeSharing::forget(const std::string &job)
{
    for (auto &[name, host] : m_hosts)
        host.jobs.erase(job);
}

size_t NodeSharing::tracked(const std::string &host) const
{
    auto it = m_hosts.find(host);
    return it == m_hosts.end() ? 0 : it->second.jobs.size();
}

} // namespace colmet::collector::hdf5
