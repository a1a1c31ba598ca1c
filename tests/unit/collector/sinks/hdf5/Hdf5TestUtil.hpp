// Helpers for the HDF5 sink tests: message builders, and a reader that checks
// the files with the plain HDF5 C API (default file access properties).
#pragma once

#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "collector/sinks/hdf5/Hdf5Io.hpp"
#include "collector/sinks/hdf5/Hdf5Sink.hpp"
#include "wire/message.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace colmet::test::h5 {

using wire::BackendBlock;
using wire::Message;
using wire::MessageKind;
using wire::MetricDescriptor;
using wire::MetricKind;

inline constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
inline constexpr int64_t k_t0 = 1'700'000'000'000'000'000;  // ns since the epoch
inline constexpr int64_t k_second = 1'000'000'000;

inline BackendBlock block(std::string name, std::vector<MetricDescriptor> metrics, std::vector<double> values,
                          wire::Scope scope = wire::Scope::job)
{
    return BackendBlock{std::move(name), scope, std::move(metrics), std::move(values), {}, {}};
}

inline BackendBlock cpu_block(double usage, double user, double system)
{
    return block(
        "cgroup_cpu",
        {{"usage", "s", MetricKind::counter}, {"user", "s", MetricKind::counter}, {"system", "s", MetricKind::counter}},
        {usage, user, system});
}

inline BackendBlock memory_block(double current, double peak)
{
    return block("cgroup_memory", {{"current", "B", MetricKind::gauge}, {"peak", "B", MetricKind::gauge}},
                 {current, peak});
}

inline BackendBlock io_block(double read_bytes, double write_bytes)
{
    return block("cgroup_io", {{"read_bytes", "B", MetricKind::counter}, {"write_bytes", "B", MetricKind::counter}},
                 {read_bytes, write_bytes});
}

inline BackendBlock processes_block(double read_chars, double write_chars)
{
    return block("processes", {{"read_chars", "B", MetricKind::counter}, {"write_chars", "B", MetricKind::counter}},
                 {read_chars, write_chars});
}

inline Message message(MessageKind kind, const std::string &job, const std::string &host, int64_t time_ns,
                       std::vector<BackendBlock> backends = {})
{
    Message m;
    m.kind = kind;
    m.job_id = job;
    m.host = host;
    m.sender = host + ":1234";
    // Every message a new seq, as a sampler numbers its messages (the sink
    // drops a message whose seq its host already holds: a duplicate).
    static uint64_t next_seq = 0;
    m.seq = ++next_seq;
    m.time_ns = time_ns;
    m.backends = std::move(backends);
    return m;
}

inline Message job_start(const std::string &job, const std::string &host, int64_t time_ns, const std::string &cpus)
{
    Message m = message(MessageKind::job_start, job, host, time_ns);
    m.meta = {
        {"user", "alice"}, {"cgroup", "/oar/alice_" + job}, {"cpus", cpus}, {"period", "1"}, {"command", "sleep 100"}};
    return m;
}

inline collector::Delivery at(int64_t mono_ns, uint64_t lost = 0) { return collector::Delivery{lost, mono_ns}; }

inline collector::Hdf5Options options(const std::filesystem::path &dir)
{
    collector::Hdf5Options o;
    o.dir = dir;
    o.flush_interval_s = 1e6;  // tests flush explicitly (batches, job end, tick)
    return o;
}

inline std::unique_ptr<collector::Hdf5Sink> make_sink(const collector::Hdf5Options &o)
{
    auto sink = collector::make_hdf5_sink(o);
    if (!sink)
        throw std::runtime_error(sink.error().message());
    return std::move(*sink);
}

// Opens a file read-only with the default file access properties.
class Reader {
public:
    explicit Reader(const std::filesystem::path &file) : m_file(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
    bool ok() const { return m_file.valid(); }
    // Close before read_job_summary(): HDF5 refuses to open one file twice in
    // a process with different locking settings (colmet turns locking off).
    void close() { m_file.reset(); }
    bool exists(const std::string &path) const { return H5Lexists(m_file.get(), path.c_str(), H5P_DEFAULT) > 0; }
    bool has_attr(const std::string &object, const char *name) const
    {
        return H5Aexists_by_name(m_file.get(), object.c_str(), name, H5P_DEFAULT) > 0;
    }

    std::vector<int64_t> time(const std::string &segment) const
    {
        collector::hdf5::Dataset ds{H5Dopen2(m_file.get(), (segment + "/time").c_str(), H5P_DEFAULT)};
        collector::hdf5::Dataspace space{H5Dget_space(ds.get())};
        hsize_t n = 0;
        EXPECT_EQ(H5Sget_simple_extent_ndims(space.get()), 1);
        H5Sget_simple_extent_dims(space.get(), &n, nullptr);
        std::vector<int64_t> out(n);
        if (n > 0) {
            EXPECT_GE(H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0);
        }
        return out;
    }

    // Row-major values; *cols receives the number of columns.
    std::vector<double> values(const std::string &segment, size_t *cols) const
    {
        collector::hdf5::Dataset ds{H5Dopen2(m_file.get(), (segment + "/values").c_str(), H5P_DEFAULT)};
        collector::hdf5::Dataspace space{H5Dget_space(ds.get())};
        std::array<hsize_t, 2> dims{};
        EXPECT_EQ(H5Sget_simple_extent_ndims(space.get()), 2);
        H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
        *cols = dims[1];
        std::vector<double> out(dims[0] * dims[1]);
        if (!out.empty()) {
            EXPECT_GE(H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0);
        }
        return out;
    }

    int64_t i64(const std::string &object, const char *name) const
    {
        collector::hdf5::Attribute a{H5Aopen_by_name(m_file.get(), object.c_str(), name, H5P_DEFAULT, H5P_DEFAULT)};
        int64_t v = -1;
        EXPECT_GE(H5Aread(a.get(), H5T_NATIVE_INT64, &v), 0) << object << " @" << name;
        return v;
    }

    std::vector<std::string> strings(const std::string &object, const char *name) const
    {
        collector::hdf5::Handle<H5Oclose> g{H5Oopen(m_file.get(), object.c_str(), H5P_DEFAULT)};
        auto v = collector::hdf5::read_strs_attr(g.get(), name);
        EXPECT_TRUE(v.ok()) << object << " @" << name;
        return v ? *v : std::vector<std::string>{};
    }

    std::string string(const std::string &object, const char *name) const
    {
        auto v = strings(object, name);
        return v.size() == 1 ? v[0] : "<not a scalar string>";
    }

private:
    collector::hdf5::File m_file;
};

// Values compare equal, NaN equal to NaN.
inline bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace colmet::test::h5
