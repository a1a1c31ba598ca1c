#include "scheduler/JobContext.hpp"

#include "common/text.hpp"

#include <array>

namespace colmet::sched {

namespace {

constexpr std::array k_keys{
    ContextKey{"job_name", ContextKind::text, false, "the job's name as its owner gave it"},
    ContextKey{"account", ContextKind::text, true, "the account the job is charged to (Slurm)"},
    ContextKey{"partition", ContextKind::text, true, "the partition the job runs in (Slurm)"},
    ContextKey{"queue", ContextKind::text, true, "the queue the job was submitted to (OAR)"},
    ContextKey{"project", ContextKind::text, false, "the job's project (OAR)"},
    ContextKey{"time_limit_s", ContextKind::count, false, "the job's time limit (walltime), in seconds"},
    ContextKey{"job_nodes", ContextKind::count, false, "the number of nodes of the whole job"},
    ContextKey{"job_cpus", ContextKind::count, false, "the CPUs allocated to the whole job"},
    ContextKey{"host_gpus", ContextKind::count, false, "the GPUs allocated to the job on this host"},
    ContextKey{"host_memory_mib", ContextKind::count, false, "the memory allocated to the job on this host, MiB"},
    ContextKey{"submit_time", ContextKind::time, false, "when the job was submitted, seconds since the epoch"},
    ContextKey{"start_time", ContextKind::time, false, "when the job started, seconds since the epoch"},
};

// A whole non-negative decimal number: digits only (no blanks, no sign).
std::optional<uint64_t> parse_count(std::string_view s)
{
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    return text::parse_u64(s);
}

// Control characters (C0, DEL) become spaces; cut to `max` bytes without
// splitting a UTF-8 sequence; spaces trimmed at both ends.
std::string safe_text(std::string_view in, size_t max)
{
    std::string out;
    out.reserve(std::min(in.size(), max));
    for (char ch : in) {
        auto c = static_cast<unsigned char>(ch);
        out.push_back(c < 0x20 || c == 0x7f ? ' ' : ch);
    }
    if (out.size() > max) {
        size_t cut = max;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
            --cut;
        out.resize(cut);
    }
    size_t first = out.find_first_not_of(' ');
    if (first == std::string::npos)
        return {};
    size_t last = out.find_last_not_of(' ');
    return out.substr(first, last - first + 1);
}

const char *env_or_null(const Getenv &env, const char *name)
{
    const char *v = env(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

std::span<const ContextKey> context_keys() { return k_keys; }

const ContextKey *find_context_key(std::string_view key)
{
    for (const auto &k : k_keys)
        if (k.key == key)
            return &k;
    return nullptr;
}

namespace {
std::string key_names(bool labels_only)
{
    std::string out;
    for (const auto &k : k_keys)
        if (k.label || !labels_only)
            out += (out.empty() ? "" : ", ") + std::string(k.key);
    return out;
}
}  // namespace

std::string context_key_names() { return key_names(false); }

std::string context_label_keys() { return key_names(true); }

Result<ContextItem> parse_context_item(std::string_view item)
{
    auto shown = [&item] { return std::string(item.substr(0, 80)); };
    auto eq = item.find('=');
    if (eq == std::string_view::npos)
        return Error::invalid("context '" + shown() + "': expected KEY=VALUE");
    std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    const ContextKey *known = find_context_key(key);
    if (known == nullptr)
        return Error::invalid("context '" + shown() + "': unknown key (known: " + context_key_names() + ")");
    if (known->kind == ContextKind::text) {
        std::string text = safe_text(value, k_max_context_value);
        if (text.empty())
            return Error::invalid("context " + std::string(key) + ": empty value");
        return ContextItem{std::string(key), std::move(text)};
    }
    auto n = parse_count(value);
    if (!n)
        return Error::invalid("context " + std::string(key) + " '" + safe_text(value, 80) +
                              "': expected a non-negative whole number");
    return ContextItem{std::string(key), std::to_string(*n)};
}

void add_context(Context &context, std::string_view key, std::string_view value)
{
    std::string item(key);
    item += '=';
    item += value;
    if (auto parsed = parse_context_item(item))
        context.push_back(std::move(*parsed));
}

std::optional<uint64_t> sum_cpus_per_node(std::string_view text)
{
    if (text.empty())
        return std::nullopt;
    uint64_t total = 0;
    while (!text.empty()) {
        auto comma = text.find(',');
        std::string_view part = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (comma != std::string_view::npos && text.empty())
            return std::nullopt;  // a trailing comma
        uint64_t times = 1;
        if (auto open = part.find("(x"); open != std::string_view::npos) {
            if (part.back() != ')')
                return std::nullopt;
            auto t = parse_count(part.substr(open + 2, part.size() - open - 3));
            if (!t || *t == 0)
                return std::nullopt;
            times = *t;
            part = part.substr(0, open);
        }
        auto n = parse_count(part);
        if (!n || *n > (uint64_t{1} << 32) || times > (uint64_t{1} << 24))
            return std::nullopt;
        total += *n * times;
    }
    return total;
}

Context slurm_prolog_context(const Getenv &env)
{
    Context out;
    if (const char *v = env_or_null(env, "SLURM_JOB_NAME"))  // not in 22.05's prolog environment
        add_context(out, "job_name", v);
    if (const char *v = env_or_null(env, "SLURM_JOB_ACCOUNT"))
        add_context(out, "account", v);
    if (const char *v = env_or_null(env, "SLURM_JOB_PARTITION"))
        add_context(out, "partition", v);
    if (const char *v = env_or_null(env, "SLURM_JOB_NUM_NODES"))
        add_context(out, "job_nodes", v);
    if (const char *v = env_or_null(env, "SLURM_JOB_CPUS_PER_NODE"))
        if (auto n = sum_cpus_per_node(v))
            add_context(out, "job_cpus", std::to_string(*n));
    if (const char *v = env_or_null(env, "SLURM_JOB_GPUS")) {
        // A list of GPU indexes, "0,1,3".
        std::string_view list(v);
        size_t n = 1;
        for (char c : list)
            n += c == ',' ? 1 : 0;
        add_context(out, "host_gpus", std::to_string(n));
    }
    return out;
}

Context slurm_step_context(const Getenv &job_env, std::optional<uint64_t> alloc_mem_mb)
{
    Context out;
    if (const char *v = env_or_null(job_env, "SLURM_JOB_NAME"))
        add_context(out, "job_name", v);
    if (const char *v = env_or_null(job_env, "SLURM_JOB_ACCOUNT"))
        add_context(out, "account", v);
    if (alloc_mem_mb && *alloc_mem_mb > 0)
        add_context(out, "host_memory_mib", std::to_string(*alloc_mem_mb));
    else if (const char *v = env_or_null(job_env, "SLURM_MEM_PER_NODE"))  // memory not a consumable resource
        add_context(out, "host_memory_mib", v);
    const char *start = env_or_null(job_env, "SLURM_JOB_START_TIME");
    const char *end = env_or_null(job_env, "SLURM_JOB_END_TIME");
    if (start != nullptr)
        add_context(out, "start_time", start);
    if (start != nullptr && end != nullptr) {
        auto s = parse_count(start);
        auto e = parse_count(end);
        if (s && e && *e > *s)
            add_context(out, "time_limit_s", std::to_string(*e - *s));
    }
    return out;
}

}  // namespace colmet::sched
