// Two LruTables under one name: entries heard often enough are kept for
// `short_ns` after they were last heard, the others (those marked slow: a
// sampler whose period is long) for `long_ns`. Each class is ordered by
// last heard, so expire() stays O(1) per entry removed; an entry that
// changes class moves between them without being forgotten. Each class
// holds at most max_entries.
#pragma once

#include "collector/LruTable.hpp"

#include <cstdint>
#include <string_view>
#include <utility>

namespace colmet::collector {

template <typename V>
class RetentionTable {
public:
    using Table = LruTable<V>;
    using Entry = typename Table::Entry;

    // Where an entry lives: null `table` when absent.
    struct Ref {
        Table *table = nullptr;
        typename Table::iterator it;
        explicit operator bool() const { return table != nullptr; }
        Entry *operator->() const { return &*it; }
    };

    RetentionTable(size_t max_entries, int64_t short_ns, int64_t long_ns)
        : m_short(max_entries), m_long(max_entries), m_short_ns(short_ns), m_long_ns(long_ns)
    {
    }

    size_t size() const { return m_short.size() + m_long.size(); }

    Ref find(std::string_view key)
    {
        if (auto it = m_short.find(key); it != m_short.end())
            return {&m_short, it};
        if (auto it = m_long.find(key); it != m_long.end())
            return {&m_long, it};
        return {};
    }

    // Heard from at now_ns; `slow` says which class it belongs to now (a
    // move may evict another entry of the class it goes to: on_evict).
    template <typename OnEvict>
    void touch(Ref ref, int64_t now_ns, bool slow, OnEvict &&on_evict)
    {
        Table &wanted = slow ? m_long : m_short;
        if (ref.table == &wanted) {
            wanted.touch(ref.it, now_ns);
            return;
        }
        Entry moved = ref.table->take(ref.it);
        wanted.insert(moved.key, std::move(moved.value), now_ns, on_evict);
    }

    // A key not in the table (on_evict as LruTable::insert).
    template <typename OnEvict>
    void insert(std::string_view key, V value, int64_t now_ns, bool slow, OnEvict &&on_evict)
    {
        (slow ? m_long : m_short).insert(key, std::move(value), now_ns, on_evict);
    }

    // Forget (after on_evict) what was not heard from for its class's time.
    template <typename OnEvict>
    void expire(int64_t now_ns, OnEvict &&on_evict)
    {
        m_short.expire(now_ns - m_short_ns, on_evict);
        m_long.expire(now_ns - m_long_ns, on_evict);
    }

private:
    Table m_short;
    Table m_long;
    int64_t m_short_ns;
    int64_t m_long_ns;
};

}  // namespace colmet::collector
