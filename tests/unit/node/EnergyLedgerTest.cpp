// The node's energy ledger (node/energy/EnergyLedger, LedgerFile): its text
// form read back exactly and hostile text refused with the line; the jobs'
// shares, the idle part and the retired shares make the node's energy at
// every update, across a counter wrap, whichever sampler made it; a job
// whose sampler died or whose cgroup went away leaves with what it had; a
// ledger that cannot be read is started afresh, and one of other RAPL files
// still in use is left alone (the backend then estimates, and says so).
#include "node/energy/EnergyLedger.hpp"
#include "FakeTree.hpp"
#include "node/energy/EnergyShareBackend.hpp"
#include "node/energy/LedgerFile.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace colmet;
using namespace colmet::node::energy;

namespace {

constexpr double k_gone = std::numeric_limits<double>::quiet_NaN();  // a job that left

LedgerState two_job_state()
{
    LedgerState s;
    s.start_ns = 1'700'000'000'000'000'000;
    s.time_ns = s.start_ns + 5'000'000'000;
    s.busy_s = 1234.5;
    s.cpus = 8;
    s.domains = {{"package_0_package", "/sys/class/powercap/intel-rapl:0/energy_uj", 100, 262143328850, 0.1, 0.2, 0},
                 {"package_0_dram", "/sys/class/powercap/intel-rapl:0:0/energy_uj", 7, 65712999613, 1.0 / 3, 0, 0}};
    s.jobs = {
        {"42", 101, 4, 12.25, {false, "/sys/fs/cgroup/cpuacct/oar/u_42", {}}, {0.1 / 7, 2.5}},
        {"7.batch", 202, 2, 0.5, {true, "/sys/fs/cgroup/system.slice/job_7", {"step_*/user", "user"}}, {0, 1e-300}}};
    return s;
}

double node_sum(const LedgerState &s, size_t domain)
{
    double total = s.domains[domain].idle_j + s.domains[domain].retired_j;
    for (const auto &j : s.jobs)
        total += j.shares_j[domain];
    return total;
}

}  // namespace

TEST(EnergyLedger, its_text_reads_back_exactly)
{
    const LedgerState s = two_job_state();
    const std::string text = format_ledger(s);
    auto back = parse_ledger(text);
    ASSERT_TRUE(back) << back.error().message() << "\n" << text;
    EXPECT_EQ(format_ledger(*back), text);
    EXPECT_EQ(back->domains[1].energy_j, 1.0 / 3) << "doubles are written to be read back bit for bit";
    EXPECT_EQ(back->jobs[0].shares_j[0], 0.1 / 7);
    EXPECT_EQ(back->jobs[1].shares_j[1], 1e-300);
    EXPECT_EQ(back->jobs[1].cpu, s.jobs[1].cpu);
    EXPECT_TRUE(back->jobs[0].cpu.leaves.empty());
    EXPECT_EQ(back->start_ns, s.start_ns);
}

TEST(EnergyLedger, hostile_text_is_refused_with_its_line)
{
    const std::string good = format_ledger(two_job_state());
    const std::string header = "colmet-energy-ledger\t1\n";
    const std::string start = "start\t10\ttime\t20\tbusy\t1\tcpus\t2\n";
    const std::string domain = "domain\tp\t/f\t1\t2\t0\t0\t0\n";
    struct Case {
        std::string text, expect;
    } cases[] = {
        {"", "empty"},
        {"colmet-energy-ledger\t2\n", "line 1: not a version 1"},
        {"something else\n", "line 1: not a version 1"},
        {header, "no start line"},
        {header + "start\t10\ttime\t5\tbusy\t1\tcpus\t2\n", "line 2: a bad start line"},
        {header + "start\t10\ttime\t20\tbusy\tnan\tcpus\t2\n", "line 2: a bad start line"},
        {header + start + start, "line 3: a bad start line"},
        {header + start + "domain\tp\t/f\t-1\t2\t0\t0\t0\n", "line 3: a bad domain line"},
        {header + start + "domain\tp\t/f\t1\t2\t0\t-0.5\t0\n", "line 3: a bad domain line"},
        {header + start + "domain\t\t/f\t1\t2\t0\t0\t0\n", "line 3: a bad domain line"},
        {header + start + domain + "job\t1\t5\t1\t0\tv1\t/c\t-\n", "line 4: a job line without one share per domain"},
        {header + start + domain + "job\t1\t5\t1\t0\tv3\t/c\t-\t0\n", "line 4: a bad job line"},
        {header + start + domain + "job\t1\t-5\t1\t0\tv1\t/c\t-\t0\n", "line 4: a bad job line"},
        {header + start + domain + "job\t1\t5\t1\t0\tv1\t/c\t-\tinf\n", "line 4: a bad share"},
        {header + start + domain + "job\t1\t5\t1\t0\tv2\t/c\ta,,b\t0\n", "line 4: a job line with an empty field"},
        {header + start + domain + "job\t1\t5\t1\t0\tv1\t/c\t-\t0\njob\t1\t5\t1\t0\tv1\t/d\t-\t0\n",
         "line 5: a job listed twice"},
        {header + start + domain + "job\t1\t5\t1\t0\tv1\t/c\t-\t0\n" + domain, "line 5: a domain after the jobs"},
        {header + start + "tasks\t1\n", "line 3: an unknown record 'tasks'"},
        {good.substr(0, good.size() - 5), "line 6: a bad share"},
        {good.substr(0, good.size() - 9), "line 6: a job line without one share per domain"},
    };
    for (const auto &c : cases) {
        auto r = parse_ledger(c.text);
        ASSERT_FALSE(r) << c.text;
        EXPECT_EQ(r.error().code(), Errc::parse);
        EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << r.error().message();
    }
    EXPECT_FALSE(check_ledger_job("a\tb", {false, "/c", {}}));
    EXPECT_FALSE(check_ledger_job("1", {false, "/c\n/d", {}}));
    EXPECT_FALSE(check_ledger_job("1", {true, "/c", {"a,b"}}));
    EXPECT_FALSE(check_ledger_job("", {true, "/c", {}}));
    EXPECT_TRUE(check_ledger_job("1", {true, "/c d", {"step_*/user"}}));
}

TEST(EnergyLedger, shares_idle_and_retired_make_the_nodes_energy_at_every_update)
{
    LedgerState s = two_job_state();
    for (auto &d : s.domains)
        d = {d.metric, d.file, 1000, 2'000'000'000, 0, 0, 0};
    for (auto &j : s.jobs)
        j.shares_j = {0, 0};
    double raw[2] = {1000, 1000}, busy = s.busy_s, cpu[2] = {s.jobs[0].cpu_s, s.jobs[1].cpu_s};
    double written[2] = {0, 0};
    int64_t t = s.time_ns;
    for (int step = 1; step <= 40; ++step) {
        NodeReading now;
        t += 250'000'000;
        now.time_ns = t;
        for (int d = 0; d < 2; ++d) {
            const double uj = 3e8 + 1e6 * step;  // wraps at 2e9 every few steps
            written[d] += uj * 1e-6;
            raw[d] = std::fmod(raw[d] + uj, 2e9);
            now.raw_uj.push_back(static_cast<uint64_t>(raw[d]));
            now.have_raw.push_back(true);
        }
        cpu[0] += 0.3;
        cpu[1] += 0.1;
        busy += 0.5 + 0.01 * step;
        now.busy_s = busy;
        now.cpus = 8;
        now.job_cpu_s = {cpu[0], s.jobs.size() > 1 ? cpu[1] : k_gone};
        if (step == 30)
            now.job_cpu_s[1] = k_gone;  // its cgroup went away: it leaves with what it had
        advance_ledger(s, now);
        for (int d = 0; d < 2; ++d) {
            EXPECT_NEAR(s.domains[d].energy_j, written[d], 1e-6) << "step " << step << ": no wrap lost";
            EXPECT_NEAR(node_sum(s, d), s.domains[d].energy_j, 1e-9 * s.domains[d].energy_j) << "step " << step;
        }
    }
    ASSERT_EQ(s.jobs.size(), 1u);
    EXPECT_GT(s.domains[0].retired_j, 0);
    EXPECT_EQ(s.jobs[0].id, "42");
    EXPECT_DOUBLE_EQ(s.jobs[0].cpu_s, cpu[0]);
}

namespace {

// A node of 2 CPUs in a tree: one RAPL counter, /proc/stat, and v1 cpuacct
// directories for jobs; the tests move them forward.
class LedgerFileTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        set_energy(0);
        set_busy(0);
        m_ledger = m_tree.path("run/energy.ledger");
    }

    void set_energy(uint64_t uj) { m_tree.write("rapl/energy_uj", std::to_string(uj) + "\n"); }
    void set_busy(double s)
    {
        m_tree.write("proc/stat", "cpu  " + std::to_string(static_cast<long>(s * 100)) +
                                      " 0 0 99999 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n");
    }
    void set_cpu(const std::string &job, double s)
    {
        m_tree.write("cpuacct/" + job + "/cpuacct.usage", std::to_string(static_cast<uint64_t>(s * 1e9)) + "\n");
    }

    LedgerSelf self(const std::string &job, int64_t pid = ::getpid())
    {
        return {job, pid, 1, {false, m_tree.path("cpuacct/" + job).string(), {}}};
    }

    std::unique_ptr<LedgerFile> file(const std::string &counter = "rapl/energy_uj")
    {
        return std::make_unique<LedgerFile>(
            m_ledger, std::vector<LedgerCounter>{{"package_0_package", m_tree.path(counter), 10'000'000}},
            m_tree.path("proc"));
    }

    LedgerState on_disk()
    {
        std::ifstream in(m_ledger);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto s = parse_ledger(text);
        EXPECT_TRUE(s) << (s ? "" : s.error().message());
        return s ? *s : LedgerState{};
    }

    test::FakeTree m_tree;
    std::filesystem::path m_ledger;
    node::backends::StatusText m_status;
};

}  // namespace

TEST_F(LedgerFileTest, two_samplers_share_the_nodes_energy_exactly_and_leave_with_their_shares)
{
    set_cpu("a", 0);
    set_cpu("b", 0);
    auto a = file(), b = file();
    auto va = a->update(self("a"), false, m_status);
    ASSERT_TRUE(va) << va.error().message();
    EXPECT_TRUE(va->entered);
    auto vb = b->update(self("b"), false, m_status);
    ASSERT_TRUE(vb) << vb.error().message();
    EXPECT_EQ(vb->jobs, 2u);
    // Ten rounds: a burns 3 times b's CPU, the node's busy time is theirs
    // (the intervals are so short that the node counts as fully busy),
    // the counter moves 3 J a step and wraps at 10 J.
    double cpu_a = 0, cpu_b = 0, uj = 0;
    double last_a = 0, last_b = 0;
    for (int round = 0; round < 10; ++round) {
        for (auto *sampler : {a.get(), b.get()}) {
            cpu_a += 0.3;
            cpu_b += 0.1;
            set_cpu("a", cpu_a);
            set_cpu("b", cpu_b);
            set_busy(cpu_a + cpu_b);
            uj += 3'000'000;
            set_energy(static_cast<uint64_t>(uj) % 10'000'000);
            const bool is_a = sampler == a.get();
            auto v = sampler->update(self(is_a ? "a" : "b"), false, m_status);
            ASSERT_TRUE(v) << v.error().message();
            (is_a ? last_a : last_b) = v->shares_j[0];
            const LedgerState s = on_disk();
            EXPECT_NEAR(node_sum(s, 0), s.domains[0].energy_j, 1e-12);
        }
    }
    EXPECT_TRUE(m_status.view().empty()) << m_status.view();
    // At their ends, each takes its shares out of the ledger.
    auto end_b = b->update(self("b"), true, m_status);
    auto end_a = a->update(self("a"), true, m_status);
    ASSERT_TRUE(end_a && end_b);
    const LedgerState s = on_disk();
    EXPECT_TRUE(s.jobs.empty());
    EXPECT_NEAR(s.domains[0].energy_j, 60, 1e-9) << "every step's 3 J, wraps included";
    EXPECT_NEAR(end_a->shares_j[0] + end_b->shares_j[0] + s.domains[0].idle_j, s.domains[0].energy_j, 1e-9);
    EXPECT_DOUBLE_EQ(s.domains[0].retired_j, end_a->shares_j[0] + end_b->shares_j[0]);
    EXPECT_NEAR(end_a->shares_j[0] / end_b->shares_j[0], 3.0, 1e-6) << "in the ratio of their CPU time";
    EXPECT_GE(end_a->shares_j[0], last_a);
    EXPECT_GE(end_b->shares_j[0], last_b);
}

TEST_F(LedgerFileTest, a_job_whose_sampler_died_or_whose_cgroup_went_away_leaves_with_its_share)
{
    set_cpu("a", 0);
    set_cpu("dead", 0);
    set_cpu("gone", 0);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    ASSERT_GT(child, 0);
    waitpid(child, nullptr, 0);  // a pid no process has
    auto a = file(), dead = file(), gone = file();
    ASSERT_TRUE(dead->update(self("dead", child), false, m_status));
    ASSERT_TRUE(gone->update(self("gone"), false, m_status));
    ASSERT_TRUE(a->update(self("a"), false, m_status));
    set_energy(2'000'000);
    set_busy(1);
    set_cpu("a", 0.5);
    set_cpu("gone", 0.5);
    // A removed cgroup's files fail to read (ENODEV), which a removed
    // file of this tree does not do: its text is spoilt first.
    set_cpu("gone", 0);
    m_tree.write("cpuacct/gone/cpuacct.usage", "removed\n");
    std::filesystem::remove_all(m_tree.path("cpuacct/gone"));
    auto v = a->update(self("a"), false, m_status);
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(v->jobs, 1u) << m_status.view();
    EXPECT_NE(m_status.view().find("the CPU time of job gone is unreadable"), std::string::npos) << m_status.view();
    const LedgerState s = on_disk();
    ASSERT_EQ(s.jobs.size(), 1u);
    EXPECT_EQ(s.jobs[0].id, "a");
    EXPECT_NEAR(node_sum(s, 0), 2.0, 1e-12);
}

TEST_F(LedgerFileTest, an_unreadable_ledger_is_started_afresh_and_another_trees_in_use_is_left_alone)
{
    set_cpu("a", 0);
    std::filesystem::create_directories(m_ledger.parent_path());
    std::ofstream(m_ledger) << "colmet-energy-ledger\t1\nstart\tgarbage\n";
    auto a = file();
    auto v = a->update(self("a"), false, m_status);
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_NE(m_status.view().find("energy ledger started afresh: energy ledger, line 2: a bad start line"),
              std::string::npos)
        << m_status.view();
    EXPECT_TRUE(v->entered);
    // A sampler of another sysfs tree: a's is still running (this process).
    m_tree.write("other/energy_uj", "5\n");
    set_cpu("b", 0);
    auto other = file("other/energy_uj");
    auto refused = other->update(self("b"), false, m_status);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), Errc::invalid);
    EXPECT_NE(refused.error().message().find("counts other RAPL files"), std::string::npos);
    EXPECT_EQ(on_disk().jobs.size(), 1u) << "left alone";
    // Once a has left, the other tree takes the ledger over.
    a->leave(self("a"));
    ASSERT_TRUE(other->update(self("b"), false, m_status));
    EXPECT_EQ(on_disk().domains[0].file, m_tree.path("other/energy_uj").string());
}

TEST_F(LedgerFileTest, the_backend_reports_the_ledgers_share_and_keeps_it_across_a_fresh_start)
{
    set_cpu("a", 0);
    const std::vector<wire::MetricDescriptor> rapl{{"package_0_package", "J", wire::MetricKind::counter}};
    LedgerSetup setup{m_ledger, {{"package_0_package", m_tree.path("rapl/energy_uj"), 10'000'000}}, self("a")};
    EnergyShareBackend backend(rapl, m_tree.path("proc"), setup);
    ASSERT_TRUE(backend.uses_ledger());
    wire::Message m;
    m.kind = wire::MessageKind::sample;
    m.meta = {{"cpus", "2"}};
    std::vector<double> v(backend.metrics().size());
    ASSERT_EQ(v.size(), 5u);
    backend.sample_from(m, v);
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[4], 1) << "ledger_jobs";
    // The whole node is a's: 2 CPUs allocated of 2, all the busy time.
    set_energy(4'000'000);
    set_busy(1);
    set_cpu("a", 1);
    backend.sample_from(m, v);
    EXPECT_NEAR(v[0], 4, 1e-9) << backend.status();
    // The ledger is lost: a enters again, and counts on from 4 J.
    std::filesystem::remove(m_ledger);
    backend.sample_from(m, v);
    EXPECT_NEAR(v[0], 4, 1e-9);
    set_energy(6'000'000);
    set_busy(2);
    set_cpu("a", 2);
    backend.sample_from(m, v);
    EXPECT_NEAR(v[0], 6, 1e-9);
    // The job's end takes it out of the ledger.
    m.kind = wire::MessageKind::job_end;
    backend.sample_from(m, v);
    EXPECT_NEAR(v[0], 6, 1e-9);
    EXPECT_TRUE(on_disk().jobs.empty());
    EXPECT_NEAR(on_disk().domains[0].retired_j, 2, 1e-9) << "the shares since the fresh start";
}

TEST_F(LedgerFileTest, the_backend_estimates_alone_when_the_ledger_is_another_trees_in_use)
{
    set_cpu("a", 0);
    set_cpu("x", 0);
    m_tree.write("other/energy_uj", "5\n");
    ASSERT_TRUE(file("other/energy_uj")->update(self("x"), false, m_status));  // alive: this process
    const std::vector<wire::MetricDescriptor> rapl{{"package_0_package", "J", wire::MetricKind::counter}};
    LedgerSetup setup{m_ledger, {{"package_0_package", m_tree.path("rapl/energy_uj"), 10'000'000}}, self("a")};
    EnergyShareBackend backend(rapl, m_tree.path("proc"), setup);
    wire::Message m;
    m.meta = {{"cpus", "2"}};
    wire::BackendBlock cpu;
    cpu.name = "cgroup_cpu";
    cpu.metrics = {{"usage", "s", wire::MetricKind::counter}};
    cpu.values = {0.0};
    wire::BackendBlock energy;
    energy.name = "rapl";
    energy.scope = wire::Scope::node;
    energy.metrics = rapl;
    energy.values = {0.0};
    m.backends = {cpu, energy};
    std::vector<double> v(backend.metrics().size());
    backend.sample_from(m, v);
    EXPECT_FALSE(backend.uses_ledger());
    EXPECT_NE(backend.status().find("energy ledger not used"), std::string::npos) << backend.status();
    EXPECT_EQ(v[0], 0) << "the estimate starts";
    EXPECT_TRUE(std::isnan(v[4])) << "no ledger_jobs";
}
