#include "job/SamplerRecord.hpp"

#include "common/file_io.hpp"
#include "common/names.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

namespace colmet::job {
namespace fs = std::filesystem;

namespace {

// Values are single lines: a newline in a user-supplied value (the spec, a
// user name) would let it forge another key.
std::string one_line(const std::string &v)
{
    std::string out = v;
    std::replace_if(
        out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    return out;
}

template <typename T>
bool parse_number(const std::string &text, T &out)
{
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && p == text.data() + text.size();
}

}  // namespace

fs::path record_path(const fs::path &run_dir, const std::string &job_id)
{
    return job_file(run_dir, job_id, JobFile::sampler_record);
}

Result<void> write_record(const fs::path &path, const SamplerRecord &r)
{
    std::ostringstream out;
    out << "pid=" << r.pid << '\n'
        << "start_ticks=" << r.start_ticks << '\n'
        << "job_id=" << one_line(r.job_id) << '\n'
        << "user=" << one_line(r.user) << '\n'
        << "cgroup=" << one_line(r.cgroup) << '\n'
        << "cgroup_root=" << one_line(r.cgroup_root) << '\n'
        << "period=" << r.period_s << '\n'
        << "collector=" << one_line(r.collector) << '\n'
        << "spec=" << one_line(r.spec) << '\n'
        << "log_file=" << one_line(r.log_file) << '\n'
        << "perf_root=" << one_line(r.perf_root) << '\n'
        << "perf_cgroup_created=" << (r.perf_cgroup_created ? 1 : 0) << '\n'
        << "job_cgroup_created=" << (r.job_cgroup_created ? 1 : 0) << '\n'
        << "created_from=" << one_line(r.created_from) << '\n'
        << "started_ns=" << r.started_ns << '\n';
    return write_file_atomic(path, out.str(), {0644, {}, true, {}});
}

Result<SamplerRecord> read_record(const fs::path &path)
{
    auto text = read_file(path);
    if (!text)
        return text.error();
    SamplerRecord r;
    std::istringstream in(*text);
    std::string line;
    bool have_pid = false;
    while (std::getline(in, line)) {
        auto eq = line.find('=');
        if (eq == std::string::npos)
            continue;
        std::string key = line.substr(0, eq);
        std::string value = line.substr(eq + 1);
        if (key == "pid")
            have_pid = parse_number(value, r.pid) && r.pid > 1;
        else if (key == "start_ticks")
            (void)parse_number(value, r.start_ticks);
        else if (key == "job_id")
            r.job_id = value;
        else if (key == "user")
            r.user = value;
        else if (key == "cgroup")
            r.cgroup = value;
        else if (key == "cgroup_root")
            r.cgroup_root = value;
        else if (key == "period")
            r.period_s = std::strtod(value.c_str(), nullptr);
        else if (key == "collector")
            r.collector = value;
        else if (key == "spec")
            r.spec = value;
        else if (key == "log_file")
            r.log_file = value;
        else if (key == "perf_root")
            r.perf_root = value;
        else if (key == "perf_cgroup_created")
            r.perf_cgroup_created = value == "1";
        else if (key == "job_cgroup_created")
            r.job_cgroup_created = value == "1";
        else if (key == "created_from")
            r.created_from = value;
        else if (key == "started_ns")
            (void)parse_number(value, r.started_ns);
    }
    if (!have_pid)
        return Error::parse(path.string() + ": no valid pid= line");
    return r;
}

std::vector<std::pair<fs::path, Result<SamplerRecord>>> list_records(const fs::path &run_dir)
{
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".pid" && it->is_regular_file(ec))
            files.push_back(it->path());
    std::sort(files.begin(), files.end());
    std::vector<std::pair<fs::path, Result<SamplerRecord>>> out;
    for (auto &f : files) {
        auto r = read_record(f);
        out.emplace_back(std::move(f), std::move(r));
    }
    return out;
}

uint64_t process_start_ticks(pid_t pid, const fs::path &proc_root)
{
    auto text = read_file(proc_root / std::to_string(pid) / "stat");
    if (!text)
        return 0;
    // The command name may hold spaces and ')': fields resume after the last ')'.
    auto close = text->rfind(')');
    if (close == std::string::npos)
        return 0;
    std::istringstream in(text->substr(close + 2));
    std::string field;
    // After ')': field 3 is the state, field 22 the start time.
    std::string state;
    in >> state;
    if (state == "Z" || state == "X")
        return 0;
    for (int i = 4; i < 22 && in >> field; ++i) {
    }
    uint64_t ticks = 0;
    if (!(in >> ticks))
        return 0;
    return ticks;
}

bool sampler_alive(const SamplerRecord &record, const fs::path &proc_root)
{
    uint64_t ticks = process_start_ticks(record.pid, proc_root);
    if (ticks == 0)
        return false;
    return record.start_ticks == 0 || record.start_ticks == ticks;
}

}  // namespace colmet::job
