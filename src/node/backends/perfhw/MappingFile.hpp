// The perfhw mapping file of the original colmet: which metric each
// counter_N column holds. The HDF5 file names its columns itself; this file
// is for tools built around the original's CSV.
#pragma once

#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace colmet::node::backends::perfhw {

// The file's content: one line "counter_<N>,<metric name>" per metric, N from 1.
std::string mapping_csv(const std::vector<wire::MetricDescriptor> &metrics);

// Write <dir>/perfhw_mapping.<seconds>.<microseconds>.csv (the original's
// time.time() naming) with mapping_csv(); returns the path. The file is
// created new (never overwrites), mode 0644.
Result<std::filesystem::path> write_mapping_file(const std::filesystem::path &dir,
                                                 const std::vector<wire::MetricDescriptor> &metrics, int64_t now_ns);

}  // namespace colmet::node::backends::perfhw
