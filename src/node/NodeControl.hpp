// colmet-node's live-reconfiguration set-up: the job's control socket
// (--control-dir) and the legacy configure endpoint (--legacy-control-uri),
// attached to the sampler (the perfhw controller comes from the counter
// backend's factory, in NodeMain). Nothing here is fatal:
// what cannot be set up is a warning and the job is sampled anyway.
#pragma once

#include "node/JobContext.hpp"
#include "node/Sampler.hpp"

#include <string>

namespace colmet::node {

struct NodeControlOptions {
    std::string control_dir;         // empty: no control socket
    std::string legacy_control_uri;  // empty: no legacy endpoint
    std::string user;                // the job's owner (--user); empty: root
};

void attach_control(Sampler &sampler, const JobContext &ctx, const NodeControlOptions &options);

}  // namespace colmet::node
