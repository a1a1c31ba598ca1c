// The node spool: its file format (a torn end and a damaged record lose
// those alone), the file (root-only directory, one locked file per job and
// sender), the outbox spilling into it and reading back in order, its bound
// dropping the oldest and saying so in `base`, the job end's spool_all, and
// a flush through a scripted collector.
#include "node/delivery/Spool.hpp"
#include "OutboxEntries.hpp"
#include "ScriptedTransport.hpp"
#include "common/names.hpp"
#include "node/delivery/Outbox.hpp"
#include "node/delivery/SpoolFlush.hpp"
#include "node/delivery/SpoolFormat.hpp"
#include "wire/codec.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace colmet;
using namespace colmet::node;
using namespace colmet::node::testing;
namespace fs = std::filesystem;

namespace {

const int64_t k_now = 1'700'000'000'000'000'000;

OutboxEntry entry(uint64_t seq, size_t pad = 0, int64_t time_ns = 0) { return make_entry(seq, pad, time_ns); }

SpoolHeader header()
{
    SpoolHeader h;
    h.job_id = "42";
    h.sender = "h/1/1";
    h.uri = "tcp://127.0.0.1:1";
    h.ack_uri = "tcp://127.0.0.1:2";
    return h;
}

std::string slurp(const fs::path &p)
{
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

class SpoolTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("colmet-spool-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    std::unique_ptr<Spool> spool(uint64_t job_bytes = 1 << 20, uint64_t node_bytes = 1 << 30)
    {
        return std::make_unique<Spool>(m_dir, header(), SpoolLimits{job_bytes, node_bytes});
    }
    fs::path file() const { return spool_file(m_dir, "42", "h/1/1"); }

    fs::path m_dir;
};

// --- the format -------------------------------------------------------------

std::string spool_bytes(const std::vector<OutboxEntry> &entries)
{
    std::string out = spool_file_start(header());
    for (const auto &e : entries) {
        out += spool_message_prefix(e.seq, e.time_ns, static_cast<uint32_t>(e.base_at), e.bytes);
        out += e.bytes;
    }
    return out;
}

std::vector<uint64_t> seqs_of(const SpoolContents &c)
{
    std::vector<uint64_t> out;
    for (const auto &r : c.records)
        out.push_back(r.seq);
    return out;
}

TEST(SpoolFormatTest, reads_back_the_header_and_every_record)
{
    const std::vector<OutboxEntry> entries = {entry(3, 0, 7), entry(4, 100, 8), entry(6)};
    const std::string bytes = spool_bytes(entries);
    const SpoolContents c = parse_spool(bytes);
    ASSERT_TRUE(c.header);
    EXPECT_EQ(*c.header, header());
    EXPECT_EQ(seqs_of(c), (std::vector<uint64_t>{3, 4, 6}));
    EXPECT_EQ(c.damaged_frames, 0u);
    EXPECT_EQ(c.damaged_bytes, 0u);
    ASSERT_EQ(c.records.size(), 3u);
    EXPECT_EQ(c.records[1].time_ns, 8);
    EXPECT_EQ(bytes.substr(c.records[1].offset, c.records[1].size), entries[1].bytes);
    EXPECT_EQ(c.records[1].base_at, entries[1].base_at);
}

TEST(SpoolFormatTest, a_torn_end_loses_the_last_record_alone)
{
    const std::string bytes = spool_bytes({entry(0), entry(1), entry(2, 300)});
    for (size_t cut = 1; cut < 300; cut += 37) {
        const SpoolContents c = parse_spool(std::string_view(bytes).substr(0, bytes.size() - cut));
        EXPECT_EQ(seqs_of(c), (std::vector<uint64_t>{0, 1})) << "cut " << cut;
        EXPECT_EQ(c.damaged_frames, 1u);
        EXPECT_GT(c.damaged_bytes, 0u);
    }
}

TEST(SpoolFormatTest, a_damaged_record_in_the_middle_loses_that_record_alone)
{
    const std::vector<OutboxEntry> entries = {entry(0), entry(1, 50), entry(2), entry(3)};
    const std::string good = spool_bytes(entries);
    const SpoolContents clean = parse_spool(good);
    // A flipped byte in record 1's message, then in its size field.
    for (size_t at : {clean.records[1].offset + 5, clean.records[1].offset - k_spool_message_overhead - 8}) {
        std::string bad = good;
        bad[at] = static_cast<char>(bad[at] ^ 0x40);
        const SpoolContents c = parse_spool(bad);
        EXPECT_EQ(seqs_of(c), (std::vector<uint64_t>{0, 2, 3})) << "byte " << at;
        EXPECT_EQ(c.damaged_frames, 1u);
    }
}

TEST(SpoolFormatTest, without_its_header_a_file_is_unusable)
{
    std::string bytes = spool_bytes({entry(0)});
    EXPECT_FALSE(parse_spool("not a spool").header);
    EXPECT_FALSE(parse_spool("").header);
    bytes[k_spool_magic.size() + 20] ^= 1;  // inside the header frame
    const SpoolContents c = parse_spool(bytes);
    EXPECT_FALSE(c.header);
    EXPECT_TRUE(c.records.empty());
    SpoolHeader two_lines = header();
    two_lines.uri = "tcp://a:1\njob_id=x";
    EXPECT_FALSE(check_spool_header(two_lines));
    EXPECT_TRUE(check_spool_header(header()));
}

TEST(SpoolFormatTest, records_whose_seq_does_not_increase_are_dropped)
{
    const SpoolContents c = parse_spool(spool_bytes({entry(5), entry(3), entry(5), entry(6)}));
    EXPECT_EQ(seqs_of(c), (std::vector<uint64_t>{5, 6}));
    EXPECT_EQ(c.out_of_order, 2u);
}

// --- the file and the outbox ---------------------------------------------------

TEST_F(SpoolTest, memory_overflow_goes_to_a_root_only_file_and_comes_back_in_order)
{
    const size_t one = entry(0, 1000).bytes.size();
    Outbox box(2 * one + one / 2, spool());
    for (uint64_t seq = 0; seq < 6; ++seq)
        box.push(entry(seq, 1000));
    EXPECT_EQ(box.spooled(), 4u);
    EXPECT_EQ(box.size(), 6u) << "nothing lost";
    EXPECT_EQ(box.stats().overflowed, 0u);
    EXPECT_EQ(box.stats().spooled, 4u);
    EXPECT_EQ(box.base(), 0u);
    ASSERT_TRUE(fs::exists(file()));
    struct stat st {};
    ASSERT_EQ(::stat(m_dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(file().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(send_all(box), (SeqBase{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}}));
    EXPECT_TRUE(box.acknowledge(2));
    EXPECT_TRUE(fs::exists(file())) << "seq 3 is still in it";
    EXPECT_TRUE(box.acknowledge(4));
    EXPECT_FALSE(fs::exists(file())) << "every message it held is acknowledged";
    EXPECT_TRUE(box.acknowledge(5));
    EXPECT_TRUE(box.empty());
}

TEST_F(SpoolTest, a_full_spool_drops_its_oldest_and_base_says_so)
{
    const size_t one = entry(0, 1000).bytes.size();
    const uint64_t frame = spool_frame_bytes(one);
    // Room for about 8 messages: the eighth of the bound dropped at a time is one message.
    const uint64_t bound = spool_file_start(header()).size() + 8 * frame + frame / 2;
    Outbox box(one, spool(bound));
    for (uint64_t seq = 0; seq < 20; ++seq)
        box.push(entry(seq, 1000));
    const uint64_t dropped = box.stats().overflowed;
    EXPECT_GT(dropped, 0u);
    EXPECT_EQ(box.size() + dropped, 20u) << "each message held or counted as dropped";
    EXPECT_EQ(box.base(), dropped) << "the oldest went";
    EXPECT_LE(fs::file_size(file()), bound);
    const SeqBase sent = send_all(box);
    ASSERT_FALSE(sent.empty());
    EXPECT_EQ(sent.front(), (std::pair<uint64_t, uint64_t>{dropped, dropped}));
    EXPECT_EQ(sent.back().first, 19u);
    EXPECT_EQ(sent.size(), 20u - dropped);
}

TEST_F(SpoolTest, the_job_end_spools_what_is_unacknowledged_without_what_was_acknowledged)
{
    const size_t one = entry(0, 200).bytes.size();
    Outbox box(3 * one, spool());
    for (uint64_t seq = 0; seq < 8; ++seq)
        box.push(entry(seq, 200, k_now + static_cast<int64_t>(seq)));
    send_all(box);
    box.acknowledge(2);  // 0..2 were spooled, and are dead in the file now
    EXPECT_EQ(box.spool_all(), 5u);
    SpoolContents c;
    auto reopened = Spool::open_existing(file(), c);
    EXPECT_FALSE(reopened) << "the sampler still holds its lock";
    ASSERT_EQ(reopened.error().code(), Errc::conflict);
    const SpoolContents on_disk = parse_spool(slurp(file()));
    EXPECT_EQ(seqs_of(on_disk), (std::vector<uint64_t>{3, 4, 5, 6, 7}));
    EXPECT_EQ(on_disk.records.front().time_ns, k_now + 3);
}

TEST_F(SpoolTest, a_spool_directory_others_may_write_is_refused)
{
    fs::create_directories(m_dir);
    ::chmod(m_dir.c_str(), 0777);
    auto r = prepare_spool_dir(m_dir);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("writable by others"), std::string::npos) << r.error().message();
    // The outbox then keeps to memory: the oldest go, counted.
    const size_t one = entry(0, 100).bytes.size();
    std::vector<std::string> warnings;
    Outbox box(one, spool(), [&](const std::string &w) { warnings.push_back(w); });
    box.push(entry(0, 100));
    box.push(entry(1, 100));
    box.push(entry(2, 100));
    EXPECT_EQ(box.stats().overflowed, 2u);
    EXPECT_EQ(box.base(), 2u);
    ASSERT_EQ(warnings.size(), 1u) << "said once";
    EXPECT_NE(warnings[0].find("spooling stops"), std::string::npos);
}

TEST_F(SpoolTest, the_node_bound_counts_the_other_jobs_files)
{
    fs::create_directories(m_dir);
    fs::permissions(m_dir, fs::perms::owner_all);
    std::ofstream(m_dir / "other.0000000000000000.spool") << std::string(4000, 'x');
    const size_t one = entry(0, 500).bytes.size();
    Outbox box(one, spool(1 << 20, 4000 + 3000));
    for (uint64_t seq = 0; seq < 20; ++seq)
        box.push(entry(seq, 500));
    EXPECT_GT(box.stats().overflowed, 0u);
    EXPECT_LE(fs::file_size(file()), 3000u);
}

// --- flushing ---------------------------------------------------------------

// A job that ended with its collector away: seqs [0, n) in its spool.
void spool_a_job(const fs::path &dir, uint64_t n, int64_t time_ns = k_now)
{
    Outbox box(0, std::make_unique<Spool>(dir, header(), SpoolLimits{}));
    for (uint64_t seq = 0; seq < n; ++seq)
        box.push(entry(seq, 100, time_ns));
    box.spool_all();
}

FlushOptions scripted(Script &script)
{
    FlushOptions o;
    o.wait_s = 0.3;
    o.max_age_s = 1e10;
    o.connect = [&script](const ZmqOptions &zmq) -> Result<std::unique_ptr<Transport>> {
        EXPECT_EQ(zmq.uri, "tcp://127.0.0.1:1");
        EXPECT_EQ(zmq.ack_uri, "tcp://127.0.0.1:2");
        return std::unique_ptr<Transport>(std::make_unique<ScriptedTransport>(script));
    };
    return o;
}

// Flush `dir` to a collector that takes and acknowledges everything.
Result<FlushTotals> flush_to_an_answering_collector(const fs::path &dir, Script &script)
{
    script.connected = true;
    script.auto_ack = true;
    FlushOptions o = scripted(script);
    o.spool_dir = dir;
    return flush_spool(o);
}

TEST_F(SpoolTest, a_flush_sends_the_file_as_its_sampler_would_and_deletes_it_once_acknowledged)
{
    spool_a_job(m_dir, 5);
    Script script;
    auto t = flush_to_an_answering_collector(m_dir, script);
    ASSERT_TRUE(t) << t.error().message();
    EXPECT_EQ(t->files, 1u);
    EXPECT_EQ(t->delivered, 1u);
    EXPECT_EQ(t->messages, 5u);
    EXPECT_EQ(t->acknowledged, 5u);
    EXPECT_EQ(script.listened, "h/1/1");
    ASSERT_EQ(script.sent.size(), 5u);
    EXPECT_EQ(script.sent.front().seq, 0u);
    EXPECT_EQ(script.sent.back().seq, 4u);
    EXPECT_FALSE(fs::exists(file()));
    EXPECT_FALSE(spool_has_files(m_dir));
}

TEST_F(SpoolTest, a_flush_without_a_collector_keeps_the_file_whole)
{
    spool_a_job(m_dir, 5);
    const std::string before = slurp(file());
    Script script;  // never connected
    script.may_answer = false;
    FlushOptions o = scripted(script);
    o.spool_dir = m_dir;
    auto t = flush_spool(o);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->kept, 1u);
    EXPECT_EQ(slurp(file()), before);
    // Half acknowledged: what is left stays, without what was acknowledged.
    Script half;
    half.connected = true;
    half.next.acked = 1;
    o = scripted(half);
    o.spool_dir = m_dir;
    t = flush_spool(o);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->kept, 1u);
    EXPECT_EQ(seqs_of(parse_spool(slurp(file()))), (std::vector<uint64_t>{2, 3, 4}));
}

TEST_F(SpoolTest, a_flush_of_a_damaged_file_delivers_the_sound_records_and_the_collector_is_told_of_the_gap)
{
    spool_a_job(m_dir, 6);
    std::string bytes = slurp(file());
    const SpoolContents c = parse_spool(bytes);
    bytes[c.records[2].offset + 3] ^= 0x10;  // seq 2 damaged
    bytes.resize(bytes.size() - 10);         // seq 5 torn
    std::ofstream(file(), std::ios::binary | std::ios::trunc) << bytes;
    Script script;
    auto t = flush_to_an_answering_collector(m_dir, script);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->delivered, 1u);
    EXPECT_EQ(t->damaged_records, 2u);
    ASSERT_EQ(script.sent.size(), 4u);
    // 0 and 1 first; 3 only once they are acknowledged, with base 3: the
    // collector counts 2 as lost instead of waiting for it.
    EXPECT_EQ(script.sent[1].seq, 1u);
    EXPECT_EQ(script.sent[2].seq, 3u);
    EXPECT_EQ(script.sent[2].base, 3u);
    EXPECT_EQ(script.sent[3].seq, 4u);
}

TEST_F(SpoolTest, a_file_without_its_header_is_put_aside_and_one_in_use_is_left_alone)
{
    fs::create_directories(m_dir);
    fs::permissions(m_dir, fs::perms::owner_all);
    const fs::path junk = m_dir / "junk.0000000000000000.spool";
    std::ofstream(junk) << "garbage";
    Outbox live(0, spool());  // a running sampler's file, locked
    live.push(entry(0));
    live.spool_all();
    Script script;
    FlushOptions o = scripted(script);
    o.spool_dir = m_dir;
    auto t = flush_spool(o);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->files, 2u);
    EXPECT_EQ(t->damaged, 1u);
    EXPECT_EQ(t->busy, 1u);
    EXPECT_TRUE(fs::exists(m_dir / "junk.0000000000000000.spool.damaged"));
    EXPECT_TRUE(fs::exists(file()));
    EXPECT_TRUE(script.sent.empty());
}

TEST_F(SpoolTest, messages_older_than_the_collector_takes_are_dropped_by_the_flush)
{
    spool_a_job(m_dir, 3, 1);  // from 1970
    Script script;
    script.connected = true;
    FlushOptions o = scripted(script);
    o.spool_dir = m_dir;
    o.max_age_s = 86400;
    auto t = flush_spool(o);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->expired, 3u);
    EXPECT_EQ(t->delivered, 1u);
    EXPECT_TRUE(script.sent.empty());
    EXPECT_FALSE(fs::exists(file()));
}

}  // namespace
