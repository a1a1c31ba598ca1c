// Base of the backends that read one job's cgroup files: a sample starts
// with every value NaN, reads the files, and reports what could not be read
// as the backend's status.
#pragma once

#include "node/MetricBackend.hpp"
#include "node/backends/support/StatusText.hpp"

#include <algorithm>
#include <limits>
#include <span>

namespace colmet::node::backends {

class CgroupFileBackend : public MetricBackend {
public:
    void sample(std::span<double> values) noexcept final
    {
        std::fill(values.begin(), values.end(), std::numeric_limits<double>::quiet_NaN());
        m_problems.clear();
        read_files(values);
        set_status(m_problems.view());
    }

protected:
    // Fill what can be read; add an item to m_problems for what cannot.
    virtual void read_files(std::span<double> values) noexcept = 0;

    StatusText m_problems;  // what failed in the current sample
};

// For the backends whose files differ between cgroup v1 and v2: each sample
// is sample_v1 or sample_v2, chosen once, at construction.
class VersionedCgroupBackend : public CgroupFileBackend {
protected:
    explicit VersionedCgroupBackend(bool v2) : m_v2(v2) {}
    virtual void sample_v1(std::span<double> values) noexcept = 0;
    virtual void sample_v2(std::span<double> values) noexcept = 0;

private:
    void read_files(std::span<double> values) noexcept final
    {
        if (m_v2)
            sample_v2(values);
        else
            sample_v1(values);
    }

    bool m_v2;
};

}  // namespace colmet::node::backends
