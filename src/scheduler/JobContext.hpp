// A job's context: what its scheduler says about it (name, account,
// partition or queue, limits, allocation, times), carried as the job's
// metadata (colmet-job start --context, colmet-ctl --context) and stored in
// its file. This table is the one list of the keys: colmet-job and
// colmet-ctl accept these and no others, the time-series sink labels the
// points with those marked `label`, and the docs list them in this order.
// Pure.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colmet::sched {

enum class ContextKind : uint8_t {
    text,   // free text: control characters become spaces, at most k_max_context_value bytes
    count,  // a non-negative decimal integer
    time,   // seconds since the epoch, a non-negative decimal integer
};

struct ContextKey {
    std::string_view key;
    ContextKind kind;
    bool label;  // low-cardinality: a label of the job's time-series points
    std::string_view meaning;
};

inline constexpr size_t k_max_context_value = 256;

std::span<const ContextKey> context_keys();
const ContextKey *find_context_key(std::string_view key);
// "job_name, account, ...": every key, comma-separated, in the table's order.
std::string context_key_names();
// "account, partition, queue": the keys that label time series.
std::string context_label_keys();

using ContextItem = std::pair<std::string, std::string>;
using Context = std::vector<ContextItem>;

// "KEY=VALUE" as a hook gives it: a known key; a value of its kind. Text is
// made safe (control characters become spaces, cut at a character boundary
// to k_max_context_value bytes); an empty value is refused (a hook leaves
// the item out instead). Errors name the item.
Result<ContextItem> parse_context_item(std::string_view item);

// Appends KEY=VALUE when parse_context_item takes it, else nothing: for
// the hooks' own readers, which leave out what the scheduler did not give.
void add_context(Context &context, std::string_view key, std::string_view value);

// What Slurm gives a job prolog in its environment (read with `env`):
// SLURM_JOB_PARTITION, SLURM_JOB_ACCOUNT (when accounting gives one),
// SLURM_JOB_NUM_NODES, SLURM_JOB_CPUS_PER_NODE (summed: "4(x2),2" is 10),
// SLURM_JOB_GPUS (counted: the GPUs on this host).
using Getenv = std::function<const char *(const char *)>;
Context slurm_prolog_context(const Getenv &env);

// What a job's step adds in slurmstepd (remote context): the job's name and
// account from the job's environment, its memory on this host (SPANK's
// S_JOB_ALLOC_MEM, in MB; where that is 0, because memory is not a
// consumable resource (SelectTypeParameters=CR_Core), what the job asked
// for per node, SLURM_MEM_PER_NODE, if it did), and, where Slurm
// (23.02 and later) sets them, SLURM_JOB_START_TIME and SLURM_JOB_END_TIME
// (the time limit is their difference).
Context slurm_step_context(const Getenv &job_env, std::optional<uint64_t> alloc_mem_mb);

// "4(x2),2" -> 10; nothing when malformed.
std::optional<uint64_t> sum_cpus_per_node(std::string_view text);

}  // namespace colmet::sched
