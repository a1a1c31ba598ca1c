#include "collector/security/ConnectionGuard.hpp"

namespace colmet::collector {

int ConnectionGuard::accepted(int fd, int64_t now_ns)
{
    ++m_stats.accepted;
    if (m_connections.size() >= m_limits.max_connections && !m_connections.count(fd)) {
        ++m_stats.over_limit;
        auto victim = m_connections.end();
        for (auto it = m_connections.begin(); it != m_connections.end(); ++it)
            if (!it->second.carried_message &&
                (victim == m_connections.end() || it->second.last_activity_ns < victim->second.last_activity_ns))
                victim = it;
        if (victim == m_connections.end())
            return fd;  // every connection is a sender's: the new one waits for a free place
        const int cut = victim->first;
        m_connections.erase(victim);
        m_connections[fd] = {now_ns, false};
        return cut;
    }
    m_connections[fd] = {now_ns, false};
    return -1;
}

void ConnectionGuard::closed(int fd) { m_connections.erase(fd); }

void ConnectionGuard::message_from(int fd, int64_t now_ns)
{
    auto it = m_connections.find(fd);
    if (it != m_connections.end())
        it->second = {now_ns, true};
}

void ConnectionGuard::protect_older_than(int64_t cutoff_ns)
{
    for (auto &[fd, c] : m_connections)
        if (!c.carried_message && c.last_activity_ns < cutoff_ns)
            c.carried_message = true;
}

std::vector<int> ConnectionGuard::idle(int64_t now_ns)
{
    std::vector<int> cut;
    for (auto it = m_connections.begin(); it != m_connections.end();) {
        if (now_ns - it->second.last_activity_ns >= m_limits.idle_timeout_ns) {
            cut.push_back(it->first);
            it = m_connections.erase(it);
            ++m_stats.idle;
        } else {
            ++it;
        }
    }
    return cut;
}

}  // namespace colmet::collector
