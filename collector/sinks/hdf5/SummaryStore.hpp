// How the HDF5 sink keeps a job's summary state in the job's file: the
// hosts' aggregates as host group attributes (rebuilt after a collector
// restart), /summary and /flags, and the summary's JSON beside the file
// (<stem>.json, read by colmet-job, which links no HDF5).
#pragma once

#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/summary/HostAggregate.hpp"
#include "collector/summary/JobSummary.hpp"
#include "common/result.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::collector {

// Read /summary and the root attribute job_id of a job file. Errc::not_found
// when the file or its summary (written at job end) does not exist.
Result<JobSummary> read_job_summary(const std::filesystem::path &file);

namespace hdf5 {

// Attribute name of a job_start meta key on a host group: object_name(key),
// prefixed with "meta_" when it would collide with the sink's own attributes.
std::string meta_attr_name(std::string_view key);

// Write the sink's attributes of one host group (and its pending meta). The
// caller clears pending_meta and dirty once the file has been flushed.
Result<void> write_host_attrs(hid_t host_group, const std::string &hostname, const HostAggregate &host);

// Rebuild the hosts of a job from an existing file: host attributes, and the
// summary values scanned from the datasets of the backends the summary uses.
Result<void> restore_hosts(hid_t file, HostMap &hosts);

// Write (or overwrite) the attributes of /summary, and the flags.
Result<void> write_summary(hid_t file, const JobSummary &summary);

// Write (or overwrite) /flags: for each flag, the attribute <name> (its
// text) and <name>_since_ns. Nothing when there is none.
Result<void> write_flags(hid_t file, const std::vector<JobFlag> &flags);

// Append the flags /flags holds that `flags` lacks (a job the sink forgot
// and meets again, read_job_summary); nothing without /flags.
void restore_flags(hid_t file, std::vector<JobFlag> &flags);

// Write the summary's JSON (summary_json, with the job's user `reader` when
// known) to `path`, the job's job_file(dir, id, JobFile::summary): through a
// temporary file, fsync'ed and renamed, born mode 0640 and readable by
// `reader` (an ACL entry, as the data file) when one is given.
Result<void> write_summary_file(const std::filesystem::path &path, const JobSummary &summary,
                                const std::string &reader);

}  // namespace hdf5

}  // namespace colmet::collector
