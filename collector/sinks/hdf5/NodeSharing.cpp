#include "collector/sinks/hdf5/NodeSharing.hpp"

#include <algorithm>
#include <limits>

namespace colmet::collector::hdf5 {

namespace {

constexpr size_t k_entry_bytes = 96;  // a map or set node's bookkeeping (estimate)

size_t heap(const std::string &s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

void NodeSharing::add_overlap(Interval &interval, const std::string &other)
{
    if (interval.overlaps.insert(other).second) {
        const size_t bytes = k_entry_bytes + heap(other);
        interval.bytes += bytes;
        m_bytes += bytes;
    }
}

void NodeSharing::erase(Host &host, std::map<std::string, Interval>::iterator it)
{
    if (it->second.ended)
        --host.ended;
    m_bytes -= std::min(m_bytes, it->second.bytes);
    host.jobs.erase(it);
}

// Forget what ended long ago, and beyond k_max_ended the oldest ended.
void NodeSharing::prune(Host &host)
{
    for (auto j = host.jobs.begin(); j != host.jobs.end();) {
        auto next = std::next(j);
        if (j->second.ended && host.latest_ns - j->second.end_ns > k_retention_ns)
            erase(host, j);
        j = next;
    }
    while (host.ended > k_max_ended) {
        auto oldest = host.jobs.end();
        for (auto j = host.jobs.begin(); j != host.jobs.end(); ++j)
            if (j->second.ended && (oldest == host.jobs.end() || j->second.end_ns < oldest->second.end_ns))
                oldest = j;
        erase(host, oldest);
    }
}

std::vector<std::pair<std::string, std::string>>
NodeSharing::observe(const std::string &host_name, const std::string &job, wire::MessageKind kind, int64_t time_ns)
{
    auto [host_it, new_host] = m_hosts.try_emplace(host_name);
    if (new_host)
        m_bytes += k_entry_bytes + heap(host_name);
    Host &host = host_it->second;
    host.latest_ns = std::max(host.latest_ns, time_ns);
    auto [it, added] = host.jobs.try_emplace(job);
    Interval &mine = it->second;
    if (added) {
        mine.bytes = k_entry_bytes + heap(job);
        m_bytes += mine.bytes;
    }
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
        if (!mine.ended)
            ++host.ended;
        mine.ended = true;
        mine.end_ns = time_ns;
    } else if (mine.ended && time_ns > mine.end_ns) {
        mine.ended = false;  // a new sampler for the same job id (restarted)
        --host.ended;
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
            add_overlap(mine, other_id);
            add_overlap(other, job);
            found.emplace_back(job, other_id);
            found.emplace_back(other_id, job);
        }
    }
    prune(host);
    return found;
}

void NodeSharing::forget(const std::string &job)
{
    for (auto h = m_hosts.begin(); h != m_hosts.end();) {
        if (auto it = h->second.jobs.find(job); it != h->second.jobs.end())
            erase(h->second, it);
        if (h->second.jobs.empty()) {
            m_bytes -= std::min(m_bytes, k_entry_bytes + heap(h->first));
            h = m_hosts.erase(h);
        } else {
            ++h;
        }
    }
}

size_t NodeSharing::tracked(const std::string &host) const
{
    auto it = m_hosts.find(host);
    return it == m_hosts.end() ? 0 : it->second.jobs.size();
}

}  // namespace colmet::collector::hdf5
