// colmet-node's live-reconfiguration set-up: the job's control socket
// (--control-dir), the legacy configure endpoint (--legacy-control-uri) and
// the perfhw controller, attached to the sampler. Nothing here is fatal:
// what cannot be set up is a warning and the job is sampled anyway.
#pragma once

#include "node/JobContext.hpp"
#include "node/Sampler.hpp"
#include "node/control/PerfhwController.hpp"

#include <string>

namespace colmet::node {

struct NodeControlOptions {
    std::string control_dir;         // empty: no control socket
    std::string legacy_control_uri;  // empty: no legacy endpoint
    std::string user;                // the job's owner (--user); empty: root
    bool perfhw_enabled = false;     // the perfhw backend runs or waits for the job's cgroup (only then is the
                                     // controller attached)
    control::JobPerfhwOptions perfhw;
};

void attach_control(Sampler &sampler, const JobContext &ctx, const NodeControlOptions &options);

}  // namespace colmet::node
