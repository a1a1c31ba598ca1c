// The files are readable without colmet: h5dump and h5py (principle 4).
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sys/wait.h>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

class Hdf5ToolsTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        auto sink = make_sink(options(m_tree.path("out")));
        sink->consume(job_start("job-42", "node1", k_t0, "4"), at(1));
        for (int i = 1; i <= 20; ++i)
            sink->consume(message(MessageKind::sample, "job-42", "node1", k_t0 + i * k_second,
                                  {cpu_block(2.0 * i, 1.5 * i, 0.5 * i), memory_block(i == 5 ? k_nan : 1e6 * i, 3e7)}),
                          at(1 + i));
        sink->consume(message(MessageKind::job_end, "job-42", "node1", k_t0 + 21 * k_second,
                              {cpu_block(42, 31.5, 10.5), memory_block(2e7, 3e7)}),
                      at(100));
        m_file = job_file(m_tree.path("out"), "job-42", JobFile::data);
        ASSERT_TRUE(std::filesystem::exists(m_file));
    }

    static int run(const std::string &command)
    {
        int status = std::system(command.c_str());
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    test::FakeTree m_tree;
    std::filesystem::path m_file;
};

TEST_F(Hdf5ToolsTest, h5dump_reads_the_file)
{
    if (!std::filesystem::exists("/usr/bin/h5dump"))
        GTEST_SKIP() << "/usr/bin/h5dump is missing (apt install hdf5-tools)";
    EXPECT_EQ(run("/usr/bin/h5dump -H '" + m_file.string() + "' > /dev/null"), 0);
    EXPECT_EQ(run("/usr/bin/h5dump -a /hosts/node1/cgroup_cpu/segment_0/names '" + m_file.string() + "' > /dev/null"),
              0);
    EXPECT_EQ(run("/usr/bin/h5dump -d /hosts/node1/cgroup_cpu/segment_0/values '" + m_file.string() + "' > /dev/null"),
              0);
}

TEST_F(Hdf5ToolsTest, h5py_reads_values_and_attributes)
{
    if (!std::filesystem::exists("/usr/bin/python3") || run("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0)
        GTEST_SKIP() << "h5py is not installed for /usr/bin/python3 (apt install python3-h5py)";
    m_tree.write("check.py", R"PY(
import math, sys
import h5py, numpy as np

with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["colmet_layout_version"] == 1
    assert f.attrs["job_id"] == "job-42", f.attrs["job_id"]
    host = f["hosts/node1"]
    for key, value in [("hostname", "node1"), ("user", "alice"), ("cpus", "4"), ("command", "sleep 100")]:
        assert isinstance(host.attrs[key], str), (key, type(host.attrs[key]))
        assert host.attrs[key] == value, (key, host.attrs[key])
    assert host.attrs["samples_received"] == 22
    assert host["cgroup_cpu"].attrs["scope"] == "job"
    seg = host["cgroup_cpu/segment_0"]
    assert list(seg.attrs["names"]) == ["usage", "user", "system"], list(seg.attrs["names"])
    assert list(seg.attrs["units"]) == ["s", "s", "s"]
    assert list(seg.attrs["kinds"]) == ["counter"] * 3
    t, v = seg["time"][:], seg["values"][:]
    assert t.dtype == np.int64 and v.dtype == np.float64, (t.dtype, v.dtype)
    assert v.shape == (21, 3) and t.shape == (21,), (v.shape, t.shape)
    assert t[0] == 1700000001000000000 and v[3, 0] == 8.0 and v[20, 2] == 10.5
    mem = host["cgroup_memory/segment_0/values"][:]
    assert math.isnan(mem[4, 0]) and mem[5, 0] == 6e6
    s = f["summary"].attrs
    assert s["cpu_time_s"] == 42.0 and s["duration_s"] == 21.0, dict(s)
    assert abs(s["cpu_efficiency"] - 42.0 / (21.0 * 4)) < 1e-12
    assert s["peak_memory_bytes"] == 3e7 and s["hosts"] == 1
print("ok")
)PY");
    EXPECT_EQ(run("/usr/bin/python3 '" + m_tree.path("check.py").string() + "' '" + m_file.string() + "'"), 0);
}

}  // namespace
