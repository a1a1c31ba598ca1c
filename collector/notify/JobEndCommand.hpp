// The site's command run for each ended job (colmet-collector --on-job-end,
// `on-job-end` in colmet.conf): `/bin/sh -c COMMAND` with the job's summary
// as JSON on its standard input (SummaryJson.hpp) and COLMET_JOB_ID,
// COLMET_JOB_USER and COLMET_JOB_FILE in its environment. It runs in a
// thread of its own, so ingest never waits for it:
//  - at most `max_running` commands at once; the jobs beyond wait in a
//    queue of at most `max_queued`, and a job that finds the queue full is
//    dropped (logged, counted);
//  - a command that runs over `timeout_s` is killed (SIGKILL to its process
//    group: the shell and what it started) and counted;
//  - a command that exits non-zero is logged with the end of its output
//    (standard output and error) and counted;
//  - each runs in its own process group, with the default signal mask and
//    dispositions, and no descriptor of the collector's but 0, 1 and 2.
// At stop, the commands running are waited for (up to their timeout), and
// those still queued are dropped, counted and named in the log.
#pragma once

#include "collector/Sink.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace colmet::collector::notify {

struct JobEndOptions {
    std::string command;  // run by /bin/sh -c
    double timeout_s = 60;
    size_t max_running = 4;
    size_t max_queued = 1000;
};

struct JobEndStats {
    uint64_t started = 0;
    uint64_t succeeded = 0;
    uint64_t failed = 0;     // exited non-zero, killed by a signal, or could not start
    uint64_t timed_out = 0;  // killed at the timeout (also counted in failed)
    uint64_t dropped = 0;    // the queue was full, or the collector stopped first
};

class JobEndCommand {
public:
    explicit JobEndCommand(JobEndOptions options);
    ~JobEndCommand();
    JobEndCommand(const JobEndCommand &) = delete;
    JobEndCommand &operator=(const JobEndCommand &) = delete;

    // Queue a job's command; never blocks on the commands.
    void submit(EndedJob job);
    // Wait for the running commands, drop the queued ones; idempotent.
    void stop();

    JobEndStats stats() const;
    // "on-job-end: 3 run, 2 succeeded, 1 failed (1 timed out), 0 dropped"
    std::string stats_text() const;

private:
    void run();

    JobEndOptions m_options;
    mutable std::mutex m_mutex;
    std::deque<EndedJob> m_queue;
    bool m_stopping = false;
    int m_wake = -1;  // eventfd: a job was queued, or stop
    JobEndStats m_stats;
    std::thread m_thread;
};

}  // namespace colmet::collector::notify
