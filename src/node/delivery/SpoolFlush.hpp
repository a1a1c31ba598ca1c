// Sending a node spool's files (Spool.hpp) to their collectors: what
// `colmet-job flush-spool` runs, from a timer or after a job's start or
// stop. Each file is sent as its sampler would have sent it (same sender,
// same collector, same keys), and deleted once every message in it is
// acknowledged; what is left waits for the next flush.
#pragma once

#include "common/result.hpp"
#include "node/ZmqTransport.hpp"
#include "node/delivery/Spool.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace colmet::node {

struct FlushOptions {
    std::filesystem::path spool_dir = k_default_spool_dir;
    double wait_s = 30;         // per file: how long to wait for its acknowledgements
    double ack_timeout_s = 10;  // without one, send the unacknowledged again
    double max_age_s = 86400;   // older messages are dropped (the collector would refuse them)
    // How to reach a collector (tests give a scripted one).
    std::function<Result<std::unique_ptr<Transport>>(const ZmqOptions &)> connect = make_zmq_transport;
};

struct FlushTotals {
    uint64_t files = 0;      // spool files found
    uint64_t delivered = 0;  // of which every message acknowledged: deleted
    uint64_t kept = 0;       // of which some messages wait for the next flush
    uint64_t busy = 0;       // in use: a running sampler, or another flush
    uint64_t damaged = 0;    // no usable header: renamed *.damaged, left for the admin
    uint64_t messages = 0;   // messages read from the files
    uint64_t acknowledged = 0;
    uint64_t expired = 0;          // older than max_age_s: dropped
    uint64_t damaged_records = 0;  // damaged regions skipped (their messages count as lost)
};

// Flush every spool file of the directory. Another flush running on the
// same directory makes this one return at once (`busy` set to the files).
Result<FlushTotals> flush_spool(const FlushOptions &options);
// One file (locked, or Errc::conflict when in use).
Result<FlushTotals> flush_spool_file(const std::filesystem::path &path, const FlushOptions &options);
// True when the directory holds spool files (a flush has work).
bool spool_has_files(const std::filesystem::path &dir);

// `colmet-job flush-spool --hook` of `spool_dir`, as colmet-node and
// colmet-job stop start it in the background (log_file empty: its default).
std::vector<std::string> flush_command(const std::filesystem::path &colmet_job, const std::filesystem::path &spool_dir,
                                       const std::string &log_file);
// colmet-node at start: when the spool holds files (jobs that ended while
// their collector was away), run flush_command() detached (double fork, a
// session of its own, standard streams on /dev/null, signals unblocked), so
// that a later sampler on the node sends them once a collector answers.
// colmet-job is looked for next to this program. Errors are logged only.
void start_background_flush(const std::filesystem::path &spool_dir, const std::string &log_file);

}  // namespace colmet::node
