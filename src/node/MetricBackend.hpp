// The one interface every sampler backend implements.
//
// Life cycle: a factory builds the backend for one job (it may fail, probe
// files, allocate); then sample() is called once per period on the hot path:
// no allocation it can avoid, no logging, no exceptions. Failures are counted
// and described by status(), which the sampler reports in the message.
#pragma once

#include "common/result.hpp"
#include "wire/message.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::node {

class MetricBackend {
public:
    virtual ~MetricBackend() = default;

    // Backend name as sent on the wire: lower snake case ("cgroup_cpu").
    virtual std::string_view name() const = 0;
    virtual wire::Scope scope() const { return wire::Scope::job; }

    // The metrics this backend fills, in order. Fixed for the backend's life
    // (a backend whose metric set changes is rebuilt by the sampler).
    virtual const std::vector<wire::MetricDescriptor> &metrics() const = 0;

    // Read current values into `values` (values.size() == metrics().size()).
    // A value that cannot be read is set to NaN.
    virtual void sample(std::span<double> values) noexcept = 0;

    // A derived backend computes its values from the other backends' values
    // of the same message (the sampler samples it after them, once the
    // message's metadata is in): it says so, and implements sample_from().
    virtual bool reads_message() const { return false; }
    virtual void sample_from(const wire::Message & /*msg*/, std::span<double> values) noexcept { sample(values); }

    // Live control (colmet-ctl): a backend whose counters can be handed
    // back and taken again, and rebuilt on other events by its factory's
    // controller (control/PerfhwController.hpp), says so; colmet-ctl's
    // perfhw requests act on it (one per sampler at most).
    virtual bool live_controlled() const { return false; }
    // Paused: release what it holds (a user's own profiler may then count);
    // the sampler sends NaN with status "paused" and does not sample it.
    virtual void pause() noexcept {}
    // Take it again, counting on from where pause() left off.
    virtual Result<void> resume() { return {}; }

    // A backend that reads the node's energy counters (joules per domain,
    // node scope) says so: the job's share of them is computed beside it
    // (node/energy).
    virtual bool node_energy() const { return false; }

    // Empty when the last sample read everything; otherwise a short reason
    // ("memory.stat: No such file or directory") sent with the message.
    virtual std::string_view status() const { return m_status; }

    // Number of samples in which at least one read failed.
    uint64_t failed_samples() const { return m_failed_samples; }

    // The job's cgroup directories this backend reads (none for node-level
    // backends): the sampler flags the backend when one of them holds none of
    // the job's processes.
    const std::vector<std::filesystem::path> &cgroup_dirs() const { return m_cgroup_dirs; }
    void set_cgroup_dirs(std::vector<std::filesystem::path> dirs) { m_cgroup_dirs = std::move(dirs); }

protected:
    // For implementations: record the outcome of one sample.
    void set_status(std::string_view status) noexcept
    {
        if (status.empty()) {
            m_status.clear();
            return;
        }
        ++m_failed_samples;
        if (m_status != status)
            m_status.assign(status.substr(0, 256));  // capacity reserved in the constructor below
    }
    MetricBackend() { m_status.reserve(256); }

private:
    std::string m_status;
    uint64_t m_failed_samples = 0;
    std::vector<std::filesystem::path> m_cgroup_dirs;
};

}  // namespace colmet::node
