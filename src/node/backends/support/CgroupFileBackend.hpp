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

}  // namespace colmet::node::backends
