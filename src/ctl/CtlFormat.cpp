#include "ctl/CtlFormat.hpp"

#include <cstdio>

namespace colmet::ctl {

using node::control::ControlAnswer;
using node::control::ControlState;
using node::control::Rejection;

std::string format_state(const ControlState &s)
{
    char period[64];
    std::snprintf(period, sizeof period, "%g s", s.period_s);
    std::string events;
    for (const auto &e : s.perfhw_events)
        events += (events.empty() ? "" : ",") + e;
    std::string out;
    out += "sample_period  " + std::string(period) + "\n";
    out += "perfhw         " + s.perfhw + (events.empty() ? "" : ": " + events) + "\n";
    out += "samples_sent   " + std::to_string(s.samples_sent) + "\n";
    out += "dropped        " + std::to_string(s.dropped) + "\n";
    out += "collector      " + s.collector + "\n";
    if (s.delivery == "acknowledged")
        out += "delivery       " + std::to_string(s.acknowledged) + " acknowledged, " +
               std::to_string(s.unacknowledged) + " unacknowledged (" + std::to_string(s.spooled) +
               " in the node spool)\n";
    else if (!s.delivery.empty())
        out += "delivery       " + s.delivery + "\n";
    return out;
}

std::string format_verdict(const std::string &job_id, const ControlAnswer &a)
{
    if (!a.accepted)
        return "job " + job_id + ": rejected (" + to_string(a.code) + "): " + a.reason;
    std::string changed;
    for (const auto &c : a.changed)
        changed += (changed.empty() ? "" : ", ") + c;
    return "job " + job_id + ": accepted (" + (changed.empty() ? std::string("no change") : changed) + ")";
}

int exit_status(const Exchange &e)
{
    if (e.error)
        return e.error->kind == Unreachable::permission ? k_exit_permission : k_exit_unavailable;
    if (!e.answer)
        return k_exit_unavailable;
    if (e.answer->accepted)
        return k_exit_accepted;
    switch (e.answer->code) {
    case Rejection::permission:
        return k_exit_permission;
    case Rejection::busy:
    case Rejection::timeout:
        return k_exit_unavailable;
    default:
        return k_exit_rejected;
    }
}

}  // namespace colmet::ctl
