// Helpers of the node-level backend tests: reading a mapping file, finding
// a metric, sampling.
#pragma once

#include "FakeTree.hpp"
#include "common/file_io.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "node/MetricBackend.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
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

// A fake perf counter's read: the count a memfd holds at offset 0.
inline bool memfd_perf_read(int fd, uint64_t &count) { return pread(fd, &count, sizeof count, 0) == sizeof count; }

// A file opener refusing every energy_uj (EACCES): RAPL zones root cannot read.
inline Result<UniqueFd> deny_energy(const std::filesystem::path &p)
{
    if (p.filename() == "energy_uj")
        return Error::system("open", p.string(), EACCES);
    return open_read(p);
}

}  // namespace colmet::test
