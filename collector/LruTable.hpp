// A table from string keys to values that keeps its entries in the order
// they were last heard from, so that it can stay bounded: the least recently
// heard entry goes first when the table is full, and entries not heard from
// for a while go on expire(). Every operation is O(1) (expire: per entry
// removed). Times must not go backwards (CLOCK_MONOTONIC).
#pragma once

#include <cstdint>
#include <iterator>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

namespace colmet::collector {

template <typename V>
class LruTable {
public:
    struct Entry {
        std::string key;
        int64_t seen_ns;  // last heard from
        V value;
    };
    using iterator = typename std::list<Entry>::iterator;

    explicit LruTable(size_t max_entries) : m_max(max_entries ? max_entries : 1) {}
    // The index points into the list's nodes: a copy would point into the original.
    LruTable(const LruTable &) = delete;
    LruTable &operator=(const LruTable &) = delete;
    LruTable(LruTable &&) noexcept = default;
    LruTable &operator=(LruTable &&) noexcept = default;

    iterator end() { return m_order.end(); }
    size_t size() const { return m_index.size(); }

    iterator find(std::string_view key)
    {
        auto it = m_index.find(key);
        return it == m_index.end() ? m_order.end() : it->second;
    }

    // The entry was heard from at now_ns: it becomes the most recent.
    void touch(iterator it, int64_t now_ns)
    {
        it->seen_ns = now_ns;
        m_order.splice(m_order.begin(), m_order, it);
    }

    // A key not in the table. When the table is full, the least recently
    // heard entry is first handed to on_evict(Entry&), then removed.
    template <typename OnEvict>
    iterator insert(std::string_view key, V value, int64_t now_ns, OnEvict &&on_evict)
    {
        if (m_index.size() >= m_max)
            erase(std::prev(m_order.end()), on_evict);
        m_order.push_front(Entry{std::string(key), now_ns, std::move(value)});
        m_index.emplace(std::string_view(m_order.front().key), m_order.begin());
        return m_order.begin();
    }

    // Remove an entry and hand it back (nothing is evicted: no callback).
    Entry take(iterator it)
    {
        m_index.erase(std::string_view(it->key));
        Entry out = std::move(*it);
        m_order.erase(it);
        return out;
    }

    // Remove (after on_evict) every entry last heard from before cutoff_ns.
    template <typename OnEvict>
    void expire(int64_t cutoff_ns, OnEvict &&on_evict)
    {
        while (!m_order.empty() && m_order.back().seen_ns < cutoff_ns)
            erase(std::prev(m_order.end()), on_evict);
    }

private:
    template <typename OnEvict>
    void erase(iterator it, OnEvict &on_evict)
    {
        on_evict(*it);
        m_index.erase(std::string_view(it->key));
        m_order.erase(it);
    }

    size_t m_max;
    std::list<Entry> m_order;                                // most recently heard first
    std::unordered_map<std::string_view, iterator> m_index;  // views of the keys in m_order
};

}  // namespace colmet::collector
