#include "ctl/CtlMain.hpp"

#include "common/names.hpp"
#include "ctl/CtlClient.hpp"
#include "ctl/CtlFormat.hpp"
#include "scheduler/JobContext.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>

namespace colmet::ctl {

using node::control::ControlRequest;
using node::control::PerfhwAction;

int ctl_main(int argc, char **argv)
{
    CLI::App app{"colmet-ctl: show or change the sampling of a running job (its colmet-node on this host)",
                 "colmet-ctl"};
    app.set_version_flag("--version", std::string("colmet-ctl ") + COLMET_VERSION);
    std::string job_id;
    double period_s = NAN;
    std::vector<std::string> events;
    bool pause = false;
    bool resume = false;
    bool status = false;
    bool sample_now = false;
    std::vector<std::string> context;
    std::string control_dir = "/run/colmet";
    double timeout_s = 5;

    app.add_option("--job-id", job_id, "The job, as the scheduler spells its id (123, 123_4, 123.0)")
        ->required()
        ->check([](const std::string &id) {
            return valid_identifier(id) ? std::string() : "must be 1 to 128 printable ASCII characters without '/'";
        });
    app.add_option("-s,--sample-period", period_s, "New sampling period in seconds (the sampler accepts 0.1 to 3600)");
    app.add_option("--perfhw-list", events,
                   "New perf event list, comma- or space-separated (names as for colmet-node --perfhw-list)");
    auto *p = app.add_flag("--pause-perfhw", pause, "Release the job's perf counters (e.g. for your own profiler)");
    auto *r = app.add_flag("--resume-perfhw", resume, "Open the job's perf counters again after --pause-perfhw");
    p->excludes(r);
    app.add_flag("--status", status, "Show the settings in force (also shown after every change)");
    app.add_flag("--sample-now", sample_now,
                 "Take and send one sample now, after any change asked with it (at most one per 0.1 s)");
    app.add_option("--context", context,
                   "KEY=VALUE (repeatable, root only): add to the job's context (keys: " + sched::context_key_names() +
                       ")")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--control-dir", control_dir, "Where the samplers' control sockets are")->capture_default_str();
    app.add_option("--timeout", timeout_s, "Seconds to wait for the sampler's answer")
        ->check(CLI::Range(0.1, 600.0))
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : k_exit_usage;
    }

    ControlRequest request;
    request.job_id = job_id;
    if (!std::isnan(period_s))
        request.period_s = period_s;
    if (!events.empty())
        request.perfhw_events = events;
    request.perfhw = pause ? PerfhwAction::pause : (resume ? PerfhwAction::resume : PerfhwAction::none);
    request.sample_now = sample_now;
    for (const auto &item : context) {
        auto parsed = sched::parse_context_item(item);
        if (!parsed) {
            std::fprintf(stderr, "Error: colmet-ctl: --%s\n", parsed.error().message().c_str());
            return k_exit_usage;
        }
        request.context.push_back(std::move(*parsed));
    }

    auto socket = node::control::control_socket_path(control_dir, job_id);
    Exchange e = exchange(socket, request, static_cast<int>(std::lround(timeout_s * 1000)));
    if (e.error) {
        std::fprintf(stderr, "Error: colmet-ctl: job %s: %s\n", job_id.c_str(), e.error->message.c_str());
        return exit_status(e);
    }
    const auto &a = *e.answer;
    std::string verdict = format_verdict(job_id, a);
    if (a.accepted)
        std::printf("%s\n", verdict.c_str());
    else
        std::fprintf(stderr, "Error: colmet-ctl: %s\n", verdict.c_str());
    if (a.state)
        std::printf("%s", format_state(*a.state).c_str());
    return exit_status(e);
}

}  // namespace colmet::ctl
