#include "collector/sinks/tsdb/BatchLedger.hpp"

#include <algorithm>

namespace colmet::collector::tsdb {

uint64_t BatchLedger::seal()
{
    m_books.try_emplace(m_current);  // settle() finds every sealed batch
    return m_current++;
}

void BatchLedger::mark_due(const std::string &sender)
{
    SenderBook &book = m_senders[sender];
    if (!book.due) {
        book.due = true;
        m_due.push_back(sender);
    }
}

// Below `base` the sender holds nothing more: a dropped range there will
// never come again (its points are lost to the store, as counted by the
// sender when it dropped them).
void BatchLedger::give_up_below(SenderBook &sender, uint64_t base)
{
    for (auto it = sender.pending.begin(); it != sender.pending.end() && it->first < base;) {
        if (!it->second.dropped) {
            ++it;
            continue;
        }
        Range rest = it->second;
        it = sender.pending.erase(it);
        if (rest.hi >= base)
            it = sender.pending.emplace(base, rest).first;
    }
}

void BatchLedger::note(const wire::Message &msg, uint64_t points, int64_t now_ns)
{
    Book &book = m_books[m_current];
    if (m_queue_counts) {
        if (points > 0) {
            m_key.assign(msg.job_id).push_back('\0');
            m_key.append(msg.host);
            if (auto it = book.points.find(m_key); it != book.points.end())
                it->second += points;
            else
                book.points.emplace(m_key, points);
        }
        return;
    }
    if (!wire::wants_ack(msg))
        return;
    SenderBook &sender = m_senders[msg.sender];
    sender.seen_ns = now_ns;
    if (!sender.seen || msg.seq < sender.first_seen)
        sender.first_seen = msg.seq;
    sender.seen = true;
    sender.last_seen = std::max(sender.last_seen, msg.seq);
    give_up_below(sender, msg.base);
    if (points > 0) {
        auto last = sender.pending.empty() ? sender.pending.end() : std::prev(sender.pending.end());
        if (last != sender.pending.end() && last->second.batch == m_current && !last->second.dropped &&
            last->second.hi + 1 == msg.seq)
            last->second.hi = msg.seq;
        else
            sender.pending.insert_or_assign(msg.seq, Range{msg.seq, m_current, false});
        if (book.senders.empty() || book.senders.back() != msg.sender)
            book.senders.push_back(msg.sender);
    }
    mark_due(msg.sender);
}

void BatchLedger::note_summary(QueuedSummary summary)
{
    if (!m_queue_counts)
        m_books[m_current].summaries.push_back(std::move(summary));
}

bool BatchLedger::wants_again(const wire::Message &msg, int64_t now_ns)
{
    if (m_queue_counts || !wire::wants_ack(msg))
        return false;  // accepted when it first came
    auto found = m_senders.find(msg.sender);
    if (found == m_senders.end())
        return true;  // forgotten: write it again rather than lose it
    SenderBook &sender = found->second;
    sender.seen_ns = now_ns;
    give_up_below(sender, msg.base);
    auto it = sender.pending.upper_bound(msg.seq);
    if (it != sender.pending.begin()) {
        --it;
        const uint64_t lo = it->first;
        Range range = it->second;
        if (msg.seq <= range.hi) {
            if (!range.dropped)
                return false;  // on its way
            // Take this seq out of the dropped range; note() files it in the current batch.
            sender.pending.erase(it);
            if (lo < msg.seq)
                sender.pending.emplace(lo, Range{msg.seq - 1, range.batch, true});
            if (msg.seq < range.hi)
                sender.pending.emplace(msg.seq + 1, Range{range.hi, range.batch, true});
            return true;
        }
    }
    if (msg.seq > sender.last_seen)
        return true;
    sender.reack = true;  // stored (or had no points): its acknowledgement may have been lost
    mark_due(msg.sender);
    return false;
}

void BatchLedger::settle(uint64_t id, BatchFate fate, std::vector<QueuedSummary> &again)
{
    auto found = m_books.find(id);
    if (found == m_books.end())
        return;
    Book book = std::move(found->second);
    m_books.erase(found);
    if (m_queue_counts) {
        if (fate != BatchFate::stored)
            for (const auto &[key, points] : book.points) {
                const size_t nul = key.find('\0');
                m_losses.push_back({key.substr(0, nul), key.substr(nul + 1), points});
            }
        return;
    }
    for (const std::string &name : book.senders) {
        auto s = m_senders.find(name);
        if (s == m_senders.end())
            continue;
        for (auto it = s->second.pending.begin(); it != s->second.pending.end();) {
            if (it->second.batch != id) {
                ++it;
            } else if (fate == BatchFate::dropped) {
                it->second.dropped = true;
                ++it;
            } else {
                it = s->second.pending.erase(it);
            }
        }
        mark_due(name);
    }
    if (fate == BatchFate::dropped)
        for (auto &summary : book.summaries)
            again.push_back(std::move(summary));
}

void BatchLedger::take_acks(std::vector<wire::Ack> &out)
{
    for (const std::string &name : m_due) {
        auto s = m_senders.find(name);
        if (s == m_senders.end())
            continue;
        SenderBook &sender = s->second;
        sender.due = false;
        // Everything below the first pending seq is stored (or given up).
        uint64_t ack = sender.last_seen;
        if (!sender.pending.empty()) {
            if (sender.pending.begin()->first <= sender.first_seen)
                continue;
            ack = sender.pending.begin()->first - 1;
        }
        if (sender.acked_any && ack <= sender.acked && !sender.reack)
            continue;
        sender.reack = false;
        sender.acked_any = true;
        sender.acked = std::max(sender.acked, ack);
        out.push_back({name, sender.acked});
    }
    m_due.clear();
}

void BatchLedger::take_losses(std::vector<SinkLoss> &out)
{
    for (auto &loss : m_losses)
        out.push_back(std::move(loss));
    m_losses.clear();
}

void BatchLedger::forget_idle(int64_t now_ns, int64_t idle_ns)
{
    std::erase_if(m_senders, [&](const auto &kv) { return !kv.second.due && now_ns - kv.second.seen_ns > idle_ns; });
}

}  // namespace colmet::collector::tsdb
