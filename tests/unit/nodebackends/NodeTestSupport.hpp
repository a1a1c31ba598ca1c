// Helpers of the node-level backend tests: reading a mapping file, finding
// a metric, sampling.
#pragma once

#include "FakeTree.hpp"
#include "node/MetricBackend.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::test {

inline std::string slurp(const std::filesystem::path &p)
{
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

inline std::vector<std::string> metric_names(const node::MetricBackend &b)
{
    std::vector<std::string> out;
    for (const auto &m : b.metrics())
        out.push_back(m.name);
    return out;
}

inline std::vector<double> take(node::MetricBackend &b)
{
    std::vector<double> values(b.metrics().size(), -1.0);
    b.sample(values);
    return values;
}

inline double at(const node::MetricBackend &b, const std::vector<double> &values, std::string_view name)
{
    for (size_t i = 0; i < b.metrics().size(); ++i)
        if (b.metrics()[i].name == name)
            return values.at(i);
    ADD_FAILURE() << "no metric " << name;
    return -1;
}

}  // namespace colmet::test
