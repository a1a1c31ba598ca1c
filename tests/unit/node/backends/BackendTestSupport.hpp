// Helpers shared by the backend tests: CgroupPaths for fixture trees,
// sampling a backend, reading a value by metric name.
#pragma once

#include "FakeTree.hpp"
#include "cgroup/CgroupPaths.hpp"
#include "common/file_io.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::test {

// v1: <root>/<controller>/job for each controller listed.
inline cgroup::CgroupPaths v1_paths(const std::filesystem::path &root, std::initializer_list<const char *> controllers)
{
    cgroup::CgroupPaths p;
    p.version = cgroup::Version::v1;
    p.relative = "/job";
    for (const char *c : controllers)
        p.controllers.emplace_back(c, root / c / "job");
    return p;
}

inline cgroup::CgroupPaths v2_paths(const std::filesystem::path &dir)
{
    cgroup::CgroupPaths p;
    p.version = cgroup::Version::v2;
    p.relative = "/job";
    p.unified = dir;
    return p;
}

inline node::JobContext context(cgroup::CgroupPaths paths, std::filesystem::path proc_root = "/proc")
{
    return node::JobContext{"42", std::move(paths), std::move(proc_root), {}};
}

inline std::vector<double> sample(node::MetricBackend &backend)
{
    std::vector<double> values(backend.metrics().size(), -1.0);
    backend.sample(values);
    return values;
}

// The value of metric `name`; fails the test when the backend has no such metric.
inline double value(const node::MetricBackend &backend, const std::vector<double> &values, std::string_view name)
{
    const auto &metrics = backend.metrics();
    for (size_t i = 0; i < metrics.size(); ++i)
        if (metrics[i].name == name)
            return values.at(i);
    ADD_FAILURE() << "no metric " << name << " in backend " << backend.name();
    return -1.0;
}

inline std::string fixture_text(std::string_view rel)
{
    auto text = read_file(fixture(rel));
    if (!text) {
        ADD_FAILURE() << text.error().message();
        return {};
    }
    return *text;
}

}  // namespace colmet::test
