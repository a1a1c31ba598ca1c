// One job's node spool file: the messages of one sampler that its outbox
// could not keep in memory, or that were still unacknowledged when the job
// ended (docs/protocol.md, "The node spool"). The format is
// SpoolFormat.hpp; this is the file: made in a root-only directory,
// locked (flock) by the one process that sends from it, appended to, read
// back by offset, rewritten without its dead records when it reaches its
// bound, and deleted once every message in it is acknowledged.
//
// Bounds: a job's file at most `job_bytes`, and all the node's spool files
// at most `node_bytes` (what the other files hold is looked at when the file
// is made and when it is rewritten). The policy (what to drop when full) is
// the outbox's (Outbox.hpp); the spool says what fits.
#pragma once

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "node/delivery/SpoolFormat.hpp"

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>

namespace colmet::node {

struct OutboxEntry;

inline constexpr const char *k_default_spool_dir = "/var/spool/colmet";

struct SpoolLimits {
    uint64_t job_bytes = uint64_t{64} << 20;
    uint64_t node_bytes = uint64_t{512} << 20;
};

// Bytes a message of `size` bytes takes in a spool file.
inline uint64_t spool_frame_bytes(size_t size) { return k_spool_frame_overhead + k_spool_message_overhead + size; }

// The spool directory, made root-only (0700) when missing; an error when
// it is not a directory, not this user's, or writable by others.
Result<void> prepare_spool_dir(const std::filesystem::path &dir);
// The bytes the spool files in `dir` hold, `except` not counted.
uint64_t spool_dir_usage(const std::filesystem::path &dir, const std::filesystem::path &except = {});

class Spool {
public:
    // A sampler's spool: the file is made at the first append.
    Spool(std::filesystem::path dir, SpoolHeader header, SpoolLimits limits);
    // An existing file for a flush: opened, checked (a regular file of this
    // user's) and locked without waiting (Errc::conflict when another
    // process holds it: a running sampler, or another flush); `contents`
    // receives what it holds.
    static Result<std::unique_ptr<Spool>> open_existing(const std::filesystem::path &path, SpoolContents &contents);

    ~Spool();
    Spool(const Spool &) = delete;
    Spool &operator=(const Spool &) = delete;

    // Room for a message of `size` bytes among the live records, and in the
    // file as it is (false: rewrite it first, compact()).
    bool fits_live(size_t size) const { return m_start + m_live + spool_frame_bytes(size) <= bound(); }
    bool fits_file(size_t size) const { return m_file + spool_frame_bytes(size) <= bound(); }
    // Append the entry's message; the entry becomes a spooled one (its bytes
    // freed, its place in the file recorded). Nothing is written on error.
    Result<void> append(OutboxEntry &entry);
    // The message of a spooled entry.
    Result<std::string> read(const OutboxEntry &entry) const;
    // A spooled entry acknowledged or given up: its record is dead.
    void forget(const OutboxEntry &entry);
    // Rewrite the file with the first `count` entries (all spooled) alone,
    // their places updated; the node bound is looked at again.
    Result<void> compact(std::deque<OutboxEntry> &entries, size_t count);
    // Everything in it is acknowledged (or given up): delete the file.
    void remove();
    Result<void> sync();

    bool exists() const { return m_fd.valid(); }
    uint64_t bound() const { return m_bound; }
    uint64_t live_bytes() const { return m_live; }
    uint64_t file_bytes() const { return m_file; }
    // Records acknowledged or given up, still in the file.
    uint64_t dead_bytes() const { return m_file > m_start + m_live ? m_file - m_start - m_live : 0; }
    const std::filesystem::path &path() const { return m_path; }
    const SpoolHeader &header() const { return m_header; }

private:
    Result<void> create();
    void update_bound();

    std::filesystem::path m_dir;
    std::filesystem::path m_path;
    SpoolHeader m_header;
    SpoolLimits m_limits;
    UniqueFd m_fd;
    uint64_t m_start = 0;  // the magic and the header
    uint64_t m_bound = 0;
    uint64_t m_file = 0;  // bytes in the file
    uint64_t m_live = 0;  // of which records not yet acknowledged nor given up
};

}  // namespace colmet::node
