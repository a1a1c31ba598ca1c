// One job's collector out of a configured list.
#pragma once

#include "common/result.hpp"
#include "node/ZmqTransport.hpp"

#include <string_view>

namespace colmet::node {

// The options for one job when `uri` lists several collectors: `uri` becomes
// the job's collector (common/collectors.hpp), and `curve_server_key` its
// key file when that lists one file per collector, comma-separated in the
// same order (a single file serves every collector). An error when either
// list is malformed or the counts differ. `ack_uri`, when "" (the default
// rule, common/collectors.hpp) or a list in the same order as `uri`, becomes
// the chosen collector's; "none" becomes "" (no acknowledgements).
Result<ZmqOptions> choose_collector(const ZmqOptions &options, std::string_view job_id);

}  // namespace colmet::node
