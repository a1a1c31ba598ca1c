#include "node/energy/EnergyLedger.hpp"

#include "common/text.hpp"
#include "node/energy/EnergySplit.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace colmet::node::energy {

namespace {

constexpr std::string_view k_magic = "colmet-energy-ledger";
constexpr size_t k_domain_fields = 8;
constexpr size_t k_job_fields = 8;  // before the shares
constexpr size_t k_max_domains = 64;
constexpr size_t k_max_jobs = 100000;

std::vector<std::string_view> fields(std::string_view line)
{
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
        size_t tab = line.find('\t', start);
        out.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
        if (tab == std::string_view::npos)
            return out;
        start = tab + 1;
    }
}

bool finite_at_least(std::string_view s, double min, double &out)
{
    auto v = text::parse_double(s);
    if (!v || !std::isfinite(*v) || *v < min)
        return false;
    out = *v;
    return true;
}

bool nonnegative_i64(std::string_view s, int64_t &out)
{
    auto v = text::parse_i64(s);
    if (!v || *v < 0)
        return false;
    out = *v;
    return true;
}

void put_double(std::string &out, double v)
{
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text read back as v
    out.append(buf, res.ptr);
}

// "a,b" -> {"a", "b"}; "-" -> {}.
std::vector<std::string> split_leaves(std::string_view s)
{
    std::vector<std::string> out;
    if (s == "-")
        return out;
    size_t start = 0;
    for (;;) {
        size_t comma = s.find(',', start);
        out.emplace_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos)
            return out;
        start = comma + 1;
    }
}

Error bad_line(size_t number, std::string_view what)
{
    return Error::parse("energy ledger, line " + std::to_string(number) + ": " + std::string(what));
}

// The energy of one domain since the last update: a counter below its last
// value wrapped (once: updates come at least every sampling period).
double energy_since(const LedgerDomain &d, uint64_t raw)
{
    if (raw >= d.raw_uj)
        return static_cast<double>(raw - d.raw_uj) * 1e-6;
    if (d.max_range_uj > d.raw_uj)
        return static_cast<double>(d.max_range_uj - d.raw_uj + raw) * 1e-6;
    return 0;  // no range known: the interval is lost rather than made up
}

}  // namespace

LedgerJob *LedgerState::find(std::string_view id, int64_t pid)
{
    for (auto &j : jobs)
        if (j.id == id && j.pid == pid)
            return &j;
    return nullptr;
}

Result<void> check_ledger_job(std::string_view id, const LedgerCpuSource &cpu)
{
    auto clean = [](std::string_view s) { return !s.empty() && s.find_first_of("\t\n\r") == std::string_view::npos; };
    if (!clean(id))
        return Error::invalid("job id '" + text::printable(id) + "' cannot be written in the energy ledger");
    if (!clean(cpu.dir))
        return Error::invalid("cgroup directory '" + text::printable(cpu.dir) +
                              "' cannot be written in the energy ledger");
    for (const auto &leaf : cpu.leaves)
        if (!clean(leaf) || leaf.find(',') != std::string::npos || leaf == "-")
            return Error::invalid("cgroup leaf pattern '" + text::printable(leaf) +
                                  "' cannot be written in the energy ledger");
    return {};
}

Result<LedgerState> parse_ledger(std::string_view text)
{
    LedgerState s;
    size_t number = 0;
    bool have_header = false, have_times = false;
    for (std::string_view line : text::Lines(text)) {
        ++number;
        if (line.empty())
            continue;
        const auto f = fields(line);
        if (!have_header) {
            if (f.size() != 2 || f[0] != k_magic || f[1] != "1")
                return bad_line(number, "not a version 1 energy ledger");
            have_header = true;
        } else if (f[0] == "start") {
            if (have_times || f.size() != 8 || f[2] != "time" || f[4] != "busy" || f[6] != "cpus" ||
                !nonnegative_i64(f[1], s.start_ns) || !nonnegative_i64(f[3], s.time_ns) ||
                !finite_at_least(f[5], 0, s.busy_s) || !finite_at_least(f[7], 0, s.cpus) || s.time_ns < s.start_ns)
                return bad_line(number, "a bad start line");
            have_times = true;
        } else if (f[0] == "domain") {
            LedgerDomain d;
            auto raw = f.size() == k_domain_fields ? text::parse_u64(f[3]) : std::nullopt;
            auto range = f.size() == k_domain_fields ? text::parse_u64(f[4]) : std::nullopt;
            if (!raw || !range || f[1].empty() || f[2].empty() || !finite_at_least(f[5], 0, d.energy_j) ||
                !finite_at_least(f[6], 0, d.idle_j) || !finite_at_least(f[7], 0, d.retired_j))
                return bad_line(number, "a bad domain line");
            if (!s.jobs.empty() || s.domains.size() >= k_max_domains)
                return bad_line(number, "a domain after the jobs, or too many domains");
            d.metric = f[1];
            d.file = f[2];
            d.raw_uj = *raw;
            d.max_range_uj = *range;
            s.domains.push_back(std::move(d));
        } else if (f[0] == "job") {
            LedgerJob j;
            if (f.size() != k_job_fields + s.domains.size())
                return bad_line(number, "a job line without one share per domain");
            if (s.jobs.size() >= k_max_jobs)
                return bad_line(number, "too many jobs");
            if (!nonnegative_i64(f[2], j.pid) || !finite_at_least(f[3], 0, j.allocated_cpus) ||
                !finite_at_least(f[4], 0, j.cpu_s) || (f[5] != "v1" && f[5] != "v2"))
                return bad_line(number, "a bad job line");
            j.id = f[1];
            j.cpu.v2 = f[5] == "v2";
            j.cpu.dir = f[6];
            j.cpu.leaves = split_leaves(f[7]);
            if (!check_ledger_job(j.id, j.cpu))
                return bad_line(number, "a job line with an empty field");
            for (size_t i = 0; i < s.domains.size(); ++i) {
                double share = 0;
                if (!finite_at_least(f[k_job_fields + i], 0, share))
                    return bad_line(number, "a bad share");
                j.shares_j.push_back(share);
            }
            if (s.find(j.id, j.pid))
                return bad_line(number, "a job listed twice");
            s.jobs.push_back(std::move(j));
        } else {
            return bad_line(number, "an unknown record '" + text::printable(f[0]) + "'");
        }
    }
    if (!have_header)
        return Error::parse("energy ledger: empty");
    if (!have_times)
        return Error::parse("energy ledger: no start line");
    return s;
}

std::string format_ledger(const LedgerState &s)
{
    std::string out;
    out.reserve(256 + 128 * (s.domains.size() + s.jobs.size()));
    out.append(k_magic).append("\t1\nstart\t").append(std::to_string(s.start_ns));
    out.append("\ttime\t").append(std::to_string(s.time_ns)).append("\tbusy\t");
    put_double(out, s.busy_s);
    out.append("\tcpus\t");
    put_double(out, s.cpus);
    out += '\n';
    for (const auto &d : s.domains) {
        out.append("domain\t").append(d.metric).append("\t").append(d.file).append("\t");
        out.append(std::to_string(d.raw_uj)).append("\t").append(std::to_string(d.max_range_uj)).append("\t");
        put_double(out, d.energy_j);
        out += '\t';
        put_double(out, d.idle_j);
        out += '\t';
        put_double(out, d.retired_j);
        out += '\n';
    }
    for (const auto &j : s.jobs) {
        out.append("job\t").append(j.id).append("\t").append(std::to_string(j.pid)).append("\t");
        put_double(out, j.allocated_cpus);
        out += '\t';
        put_double(out, j.cpu_s);
        out.append(j.cpu.v2 ? "\tv2\t" : "\tv1\t").append(j.cpu.dir).append("\t");
        out.append(j.cpu.leaves.empty() ? "-" : text::join(j.cpu.leaves, ","));
        for (size_t i = 0; i < s.domains.size(); ++i) {
            out += '\t';
            put_double(out, i < j.shares_j.size() ? j.shares_j[i] : 0.0);
        }
        out += '\n';
    }
    return out;
}

void retire_job(LedgerState &state, size_t index)
{
    const LedgerJob &j = state.jobs[index];
    for (size_t i = 0; i < state.domains.size() && i < j.shares_j.size(); ++i)
        state.domains[i].retired_j += j.shares_j[i];
    state.jobs.erase(state.jobs.begin() + static_cast<std::ptrdiff_t>(index));
}

void advance_ledger(LedgerState &state, const NodeReading &now)
{
    const bool first = state.start_ns == 0;
    if (!first && now.time_ns > state.time_ns) {
        std::vector<JobInterval> intervals;
        intervals.reserve(state.jobs.size());
        for (size_t k = 0; k < state.jobs.size(); ++k) {
            const double cpu = k < now.job_cpu_s.size() ? now.job_cpu_s[k] : std::numeric_limits<double>::quiet_NaN();
            // A job leaving now is charged nothing more: its CPU time since
            // the last update is not known.
            intervals.push_back({std::isnan(cpu) ? 0.0 : std::max(cpu - state.jobs[k].cpu_s, 0.0),
                                 std::isnan(cpu) ? 0.0 : state.jobs[k].allocated_cpus});
        }
        const double seconds = static_cast<double>(now.time_ns - state.time_ns) / 1e9;
        for (size_t i = 0; i < state.domains.size(); ++i) {
            LedgerDomain &d = state.domains[i];
            if (i >= now.raw_uj.size() || !now.have_raw[i])
                continue;  // counted with the next update that reads it
            const double energy = energy_since(d, now.raw_uj[i]);
            const NodeInterval node{energy, seconds, std::max(now.busy_s - state.busy_s, 0.0), now.cpus};
            const EnergySplit split = split_energy(node, intervals);
            d.energy_j += energy;
            d.idle_j += split.idle_j;
            for (size_t k = 0; k < state.jobs.size(); ++k)
                state.jobs[k].shares_j[i] += split.jobs[k];
        }
    }
    if (first)
        state.start_ns = now.time_ns;
    if (first || now.time_ns > state.time_ns) {
        state.time_ns = now.time_ns;
        state.busy_s = now.busy_s;
        state.cpus = now.cpus;
        for (size_t i = 0; i < state.domains.size() && i < now.raw_uj.size(); ++i)
            if (now.have_raw[i])
                state.domains[i].raw_uj = now.raw_uj[i];
    }
    for (size_t k = state.jobs.size(); k-- > 0;) {
        const double cpu = k < now.job_cpu_s.size() ? now.job_cpu_s[k] : std::numeric_limits<double>::quiet_NaN();
        if (std::isnan(cpu))
            retire_job(state, k);
        else
            state.jobs[k].cpu_s = std::max(cpu, state.jobs[k].cpu_s);
    }
}

}  // namespace colmet::node::energy
