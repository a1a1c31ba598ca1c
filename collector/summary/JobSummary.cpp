#include "collector/summary/JobSummary.hpp"

#include "common/file_io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <system_error>
#include <utility>

namespace colmet::collector {

std::vector<SummaryNumber> summary_numbers(const JobSummary &s)
{
    std::vector<SummaryNumber> out;
    out.reserve(k_summary_f64.size() + k_summary_u64.size());
    for (const auto &f : k_summary_f64)
        out.push_back({f.name, f.metric, s.*f.field});
    for (const auto &f : k_summary_u64)
        out.push_back({f.name, f.metric, static_cast<double>(s.*f.field)});
    return out;
}

std::string summary_json(const JobSummary &s, std::string_view user)
{
    nlohmann::json numbers = nlohmann::json::object();
    for (const auto &f : k_summary_f64) {
        const double v = s.*f.field;
        numbers[f.name] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    }
    for (const auto &f : k_summary_u64)
        numbers[f.name] = s.*f.field;
    for (const auto &f : k_summary_i64)
        numbers[f.name] = s.*f.field;
    nlohmann::json out = {
        {"job_id", s.job_id},
        {"user", user.empty() ? nlohmann::json(nullptr) : nlohmann::json(user)},
        {"file", s.file.string()},
        {"complete", s.hosts_without_job_end == 0},
        {"summary", std::move(numbers)},
    };
    nlohmann::json flags = nlohmann::json::array();
    for (const auto &f : s.flags)
        flags.push_back({{"name", f.name}, {"text", f.text}, {"since_ns", f.since_ns}});
    out["flags"] = std::move(flags);
    if (!s.cgroup_warning.empty())
        out["cgroup_warning"] = s.cgroup_warning;
    // Bytes that are not UTF-8 (a job id is any printable text, a user name
    // any bytes) are replaced, never refused.
    return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<JobSummary> parse_summary_json(std::string_view text)
{
    nlohmann::json in = nlohmann::json::parse(text, nullptr, false);
    if (in.is_discarded() || !in.is_object())
        return Error::invalid("not a JSON object");
    auto string_of = [&](const nlohmann::json &v) { return v.is_string() ? v.get<std::string>() : std::string(); };
    JobSummary s;
    s.job_id = string_of(in.value("job_id", nlohmann::json()));
    if (s.job_id.empty())
        return Error::invalid("no job_id");
    s.file = string_of(in.value("file", nlohmann::json()));
    const nlohmann::json numbers = in.value("summary", nlohmann::json::object());
    if (!numbers.is_object())
        return Error::invalid("summary is not an object");
    for (const auto &f : k_summary_f64)
        if (auto it = numbers.find(f.name); it != numbers.end() && it->is_number())
            s.*f.field = it->get<double>();
    for (const auto &f : k_summary_u64)
        if (auto it = numbers.find(f.name); it != numbers.end() && it->is_number_unsigned())
            s.*f.field = it->get<uint64_t>();
    for (const auto &f : k_summary_i64)
        if (auto it = numbers.find(f.name); it != numbers.end() && it->is_number_integer())
            s.*f.field = it->get<int64_t>();
    s.cgroup_warning = string_of(in.value("cgroup_warning", nlohmann::json()));
    const nlohmann::json flags = in.value("flags", nlohmann::json::array());
    if (!flags.is_array())
        return Error::invalid("flags is not a list");
    for (const auto &f : flags) {
        if (!f.is_object())
            return Error::invalid("a flag is not an object");
        JobFlag flag{string_of(f.value("name", nlohmann::json())), string_of(f.value("text", nlohmann::json())), 0};
        if (auto it = f.find("since_ns"); it != f.end() && it->is_number_integer())
            flag.since_ns = it->get<int64_t>();
        if (flag.name.empty())
            return Error::invalid("a flag has no name");
        s.flags.push_back(std::move(flag));
    }
    return s;
}

Result<JobSummary> read_summary_file(const std::filesystem::path &path)
{
    auto text = read_file(path);
    if (!text) {
        if (text.error().sys_errno() == ENOENT)
            return Error(Errc::not_found,
                         path.string() + " does not exist (the job has not ended, or no HDF5 sink stores it)");
        return text.error();
    }
    auto summary = parse_summary_json(*text);
    if (!summary)
        return summary.error().with_context(path.string());
    return summary;
}

}  // namespace colmet::collector
