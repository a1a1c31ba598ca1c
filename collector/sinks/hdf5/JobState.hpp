// Everything the HDF5 sink knows about one job (private to the sink).
#pragma once

#include "collector/flags/WasteFlags.hpp"
#include "collector/sinks/hdf5/JobWriter.hpp"
#include "collector/summary/HostAggregate.hpp"

#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <optional>
#include <string>

namespace colmet::collector::hdf5 {

// `file` is the job's rows and structure in memory, null while the job is
// closed (ended, idle, or closed for the memory budget); `hosts` stays, so a
// reopen needs no read-back. A state is forgotten after idle_close_s of
// silence once its file is closed; a later message rebuilds it from the file
// (restore_hosts).
struct JobState {
    std::string job_id;
    std::filesystem::path path;
    HostMap hosts;
    std::unique_ptr<JobWriter> file;
    std::optional<std::list<JobState *>::iterator> attached;  // in the sink's list of open files
    bool restored = false;                                    // hosts include what an existing file held
    bool announced = false;        // handed to the ended-job listener (or ended before a restart)
    bool summary_pending = false;  // a job_end still to be written (writing was paused, or failed)
    int64_t last_activity_ns = 0;
    int64_t last_flush_ns = 0;
    int64_t retry_after_ns = 0;    // after a failed open, do not retry before
    std::string reader;            // the job's user, who may read the file (hdf5-owner = job-user)
    bool reader_granted = false;   // the file's ACL was set (or failed: not tried again)
    bool reader_conflict = false;  // a host named another user (logged once)
    size_t file_bytes = 0;         // file->memory_bytes() as counted in the sink's estimate
    size_t state_bytes = 0;        // this state as counted in the sink's estimate
    flags::FlagState flags;        // the waste flags' windows and what they raised
};

}  // namespace colmet::collector::hdf5
