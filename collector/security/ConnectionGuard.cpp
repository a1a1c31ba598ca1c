#include "collector/security/ConnectionGuard.hpp"

namespace colmet::collector {

bool ConnectionGuard::accepted(int fd, int64_t now_ns)
{
    ++m_stats.accepted;
    if (m_last_activity.size() >= m_limits.max_connections && !m_last_activity.count(fd)) {
        ++m_stats.over_limit;
        return false;
    }
    m_last_activity[fd] = now_ns;
    return true;
}

void ConnectionGuard::closed(int fd) { m_last_activity.erase(fd); }

void ConnectionGuard::message_from(int fd, int64_t now_ns)
{
    auto it = m_last_activity.find(fd);
    if (it != m_last_activity.end())
        it->second = now_ns;
}

std::vector<int> ConnectionGuard::idle(int64_t now_ns)
{
    std::vector<int> cut;
    for (auto it = m_last_activity.begin(); it != m_last_activity.end();) {
        if (now_ns - it->second >= m_limits.idle_timeout_ns) {
            cut.push_back(it->first);
            it = m_last_activity.erase(it);
            ++m_stats.idle;
        } else {
            ++it;
        }
    }
    return cut;
}

} // namespace colmet::collector
