// The sampling loop of colmet-node: read every backend once per period,
// encode one message, hand it to the transport. Single-threaded; SIGTERM and
// SIGINT arrive through a signalfd, and the optional control channels
// (the job's control socket, the legacy configure endpoint) are polled in the
// same poll() so the loop wakes at once and a request never delays a sample
// by more than the time it takes to apply it.
#pragma once

#include "cgroup/CgroupPaths.hpp"
#include "common/log.hpp"
#include "node/MetricBackend.hpp"
#include "node/Transport.hpp"
#include "node/control/ControlProtocol.hpp"
#include "node/delivery/Delivery.hpp"
#include "node/delivery/Outbox.hpp"
#include "node/delivery/Spool.hpp"
#include "wire/message.hpp"

#include <poll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace colmet::node {

namespace control {
class ControlServer;
class LegacyControl;
class PerfhwController;
}  // namespace control

class JobCgroups;

// The backends that read the job's cgroups, built for a set of directories,
// with the job metadata that changes with them ("cpus").
struct JobBackends {
    std::vector<std::unique_ptr<MetricBackend>> backends;
    std::vector<std::pair<std::string, std::string>> meta;
};
using JobBackendBuilder = std::function<JobBackends(const cgroup::CgroupPaths &)>;

struct SamplerConfig {
    std::string job_id;
    std::string host;
    double period_s = 5;
    std::vector<std::pair<std::string, std::string>> meta;  // sent in job_start
    // The job's primary cgroup directory: when it disappears the job is over.
    std::string cgroup_dir;
    std::string collector_uri;  // reported by the control status only
    // The perfhw event names as given at start (reported by the control status).
    std::vector<std::string> perfhw_events;
    // Acknowledged delivery (a transport that has it): the outbox's bound,
    // how long an acknowledgement may take before the unacknowledged
    // messages are sent again (doubling up to 5 min while none comes), and
    // how long the job end waits for the last ones.
    size_t outbox_bytes = size_t{16} << 20;
    double ack_timeout_s = 30;
    double ack_wait_s = 2;
    // The node spool (Spool.hpp; empty: none): where the outbox's overflow
    // goes, and at the job end what is still unacknowledged. `spool_target`
    // says where a later flush sends it (the job and the sender are filled
    // in by the sampler).
    std::string spool_dir;
    SpoolLimits spool_limits;
    SpoolHeader spool_target;
};

struct SamplerStats {
    uint64_t samples = 0;  // messages queued (with acknowledgements: put in the outbox)
    uint64_t dropped = 0;  // messages refused by the full queue, or pushed out of the full outbox
    uint64_t encode_errors = 0;
    uint64_t spooled = 0;         // of those unacknowledged at the end, left in the spool for a flush
    uint64_t unacknowledged = 0;  // unacknowledged at the end and not in the spool: may be missing
};

class Sampler {
public:
    Sampler(SamplerConfig config, std::vector<std::unique_ptr<MetricBackend>> backends,
            std::unique_ptr<Transport> transport);
    ~Sampler();

    // Live reconfiguration (all optional, before run()). The perfhw
    // controller rebuilds and moves the backend that is live_controlled()
    // (MetricBackend.hpp), which pauses and resumes itself; without one (or
    // without that backend) perfhw requests are refused.
    void set_control_server(std::unique_ptr<control::ControlServer> server);
    void set_legacy_control(std::unique_ptr<control::LegacyControl> legacy);
    void set_perfhw_controller(std::unique_ptr<control::PerfhwController> controller);

    // The job's cgroups (optional, before run()): refreshed before every
    // sample; when the directories change (found from the job's processes),
    // the first `job_backends` backends are replaced by what `builder`
    // makes, and the perfhw controller moves the perfhw counters there (or
    // opens them, when the job's directory did not exist at start). A directory holding none of the job's processes is
    // flagged in the status of the backends reading it, and recorded once in the metadata (cgroup_warning).
    void set_job_cgroups(std::unique_ptr<JobCgroups> cgroups, size_t job_backends, JobBackendBuilder builder);

    // Run until SIGTERM/SIGINT (which must be blocked in the calling thread;
    // the loop reads them from a signalfd) or until the job's cgroup
    // disappears. Sends job_start first and job_end with a final sample last.
    // Returns the signal number that ended the loop (0 when the cgroup went away).
    int run();

    // One sample of every backend into the message (for tests and benchmarks).
    void sample_once(wire::MessageKind kind);
    // One period's work outside run() (tests and benchmarks): sample, send
    // (into the outbox with acknowledged delivery), then take in what the
    // transport reports (acknowledgements, reconnections, a timeout due).
    void step(wire::MessageKind kind);
    // The job end's wait for the last acknowledgements and the final log
    // line (run() calls it after job_end).
    void finish();
    const wire::Message &message() const { return m_msg; }
    const SamplerStats &stats() const { return m_stats; }
    // Acknowledged delivery: null without it.
    const Outbox *outbox() const { return m_outbox.get(); }

    // Apply one control request, all or nothing (SamplerControl.cpp): a
    // period change re-aligns the next sample at once; an event change
    // replaces the perfhw backend (new descriptors, so a new HDF5 segment);
    // pause releases the counters and sends NaN with status "paused".
    control::ControlAnswer apply(const control::ControlRequest &request);
    control::ControlState state() const;
    double period_s() const { return m_config.period_s; }
    // CLOCK_REALTIME ns of the next sample run() will take.
    int64_t next_sample_ns() const { return m_next_ns; }
    bool perfhw_paused() const { return m_perfhw_paused; }

private:
    void send_current();
    // Take in what the transport reports; with acknowledged delivery, send
    // what is due (Delivery).
    void handle_transport(int64_t now_mono_ns);
    void log_end() const;
    const char *drop_reason() const;  // why messages are dropped, for the log
    int poll_timeout_ms(bool legacy_pending) const;
    size_t perfhw_index() const;  // index of the live_controlled() backend, or npos
    void refresh_cgroups();       // before a sample
    void check_cgroups();         // after it
    void rebuild_job_backends();
    // After the job's cgroups changed: the perfhw controller's counters
    // follow them (opened now if they could not be before).
    void relocate_perfhw();
    // perfhw waits for the job's directory (cgroup v2, not made yet): the
    // loop looks for it every k_directory_poll_ms.
    bool perfhw_awaits_directory() const;
    static constexpr int k_directory_poll_ms = 10;
    static wire::BackendBlock block_for(const MetricBackend &backend);

    SamplerConfig m_config;
    std::vector<std::unique_ptr<MetricBackend>> m_backends;
    std::unique_ptr<Transport> m_transport;
    wire::Message m_msg;
    std::string m_buffer;
    SamplerStats m_stats;
    uint64_t m_unreported_drops = 0;
    std::unique_ptr<Outbox> m_outbox;
    std::unique_ptr<Delivery> m_delivery;

    std::unique_ptr<control::ControlServer> m_control;
    std::unique_ptr<control::LegacyControl> m_legacy;
    std::unique_ptr<control::PerfhwController> m_perfhw;
    std::unique_ptr<JobCgroups> m_cgroups;
    size_t m_job_backends = 0;  // m_backends[0, m_job_backends) read the job's cgroups
    JobBackendBuilder m_builder;
    std::vector<std::pair<std::string, std::string>> m_pending_meta;  // sent with the next message
    int64_t m_next_ns = 0;
    bool m_perfhw_paused = false;
    log::RateLimiter m_control_log{10, std::chrono::seconds(60)};  // rejected requests logged
};

}  // namespace colmet::node
