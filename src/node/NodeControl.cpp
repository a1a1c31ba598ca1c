#include "node/NodeControl.hpp"

#include "common/log.hpp"
#include "node/control/ControlServer.hpp"
#include "node/control/LegacyControl.hpp"

namespace colmet::node {

void attach_control(Sampler &sampler, const JobContext &ctx, const NodeControlOptions &o)
{
    if (!o.control_dir.empty()) {
        control::ControlServerOptions so;
        so.dir = o.control_dir;
        so.job_id = ctx.job_id;
        if (auto owner = control::resolve_owner(o.user)) {
            so.owner_uid = owner->first;
            so.owner_gid = owner->second;
        } else {
            spdlog::warn("control socket: --user: {}; only root may use it", owner.error().message());
        }
        auto server = control::ControlServer::open(so);
        if (server) {
            spdlog::info("control socket {} (owner uid {})", (*server)->path().string(), so.owner_uid);
            sampler.set_control_server(std::move(*server));
        } else {
            spdlog::warn("no control socket, colmet-ctl cannot reach this job: {}", server.error().message());
        }
    }

    if (!o.legacy_control_uri.empty()) {
        auto legacy = control::LegacyControl::bind(o.legacy_control_uri);
        if (legacy) {
            spdlog::warn("legacy control endpoint {} accepts unauthenticated configure messages", o.legacy_control_uri);
            sampler.set_legacy_control(std::move(*legacy));
        } else {
            spdlog::warn("no legacy control endpoint: {}", legacy.error().message());
        }
    }
}

}  // namespace colmet::node
