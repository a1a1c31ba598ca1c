// Backend gpu against a test double of NVML (tests/support/fake_nvml.c,
// loaded as colmet-node would load libnvidia-ml.so.1): which GPUs a job
// gets (devices cgroup, then the list, then all), the values and their
// units, NaN with a status for what NVML does not support, the energy
// counted from the start, the job's processes' memory and its share of a
// shared GPU's energy; a library that is absent or fails to start is an
// error, not zeros.
#include "node/backends/gpu/GpuBackend.hpp"
#include "FakeTree.hpp"
#include "node/backends/gpu/GpuSelection.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

using namespace colmet;
using namespace colmet::node::backends::gpu;

TEST(GpuSelection, the_devices_cgroup_comes_first_then_the_list_then_every_gpu)
{
    const std::vector<DeviceId> devices{{0, "GPU-aaaa", 0}, {1, "GPU-bbbb", 1}, {2, "GPU-cccc", 3}};
    auto s = select_gpus(devices, "c 195:255 rw\nc 195:3 rw\nc 1:3 rwm\n", "0", "CUDA_VISIBLE_DEVICES");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->indices, std::vector<unsigned>{2}) << "/dev/nvidia3 only (255 is nvidiactl)";
    EXPECT_TRUE(s->exclusive);
    EXPECT_EQ(s->source, "devices cgroup");
    // A devices cgroup that allows everything says nothing: the list decides.
    s = select_gpus(devices, "a *:* rwm\n", "GPU-bbbb, 0", "CUDA_VISIBLE_DEVICES");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->indices, (std::vector<unsigned>{0, 1}));
    EXPECT_FALSE(s->exclusive);
    EXPECT_EQ(s->source, "CUDA_VISIBLE_DEVICES");
    s = select_gpus(devices, "", "", "");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->indices, (std::vector<unsigned>{0, 1, 2}));
    EXPECT_NE(s->source.find("not known"), std::string::npos);
    auto bad = select_gpus(devices, "", "7", "SLURM_JOB_GPUS");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("SLURM_JOB_GPUS: '7' names no GPU"), std::string::npos);
    EXPECT_FALSE(select_gpus(devices, "", "GPU-zzzz", "--gpus"));
}

namespace {

class GpuBackendTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        setenv("COLMET_FAKE_NVML", m_values.c_str(), 1);
        unsetenv("COLMET_FAKE_NVML_INIT");
        std::filesystem::create_directories(m_tree.path("job"));
        std::ofstream(m_tree.path("job") / "cgroup.procs") << "100\n200\n";
    }
    void TearDown() override { unsetenv("COLMET_FAKE_NVML"); }

    void write(const std::string &text) { std::ofstream(m_values) << text; }

    GpuOptions options(std::string list = "") const
    {
        GpuOptions o;
        o.library = COLMET_FAKE_NVML_LIBRARY;
        o.list = std::move(list);
        o.list_source = "--gpus";
        o.procs_dir = m_tree.path("job");
        return o;
    }

    static std::vector<double> sample(GpuBackend &b)
    {
        std::vector<double> v(b.metrics().size());
        b.sample(v);
        return v;
    }

    test::FakeTree m_tree;
    std::string m_values = m_tree.path("nvml.txt").string();
};

}  // namespace

TEST_F(GpuBackendTest, reads_the_jobs_gpus_in_si_units)
{
    write("gpu 0 GPU-aaaa 0 util=50 memutil=20 used=1000 total=8000 power=150000 energy=1000000 temp=60 sm=1500 "
          "mem=5000\n"
          "gpu 1 GPU-bbbb 1 util=0 memutil=0 used=0 total=8000 power=30000 energy=500 temp=40 sm=300 mem=5000\n"
          "proc 1 100 300\nproc 1 999 100\n");
    auto made = GpuBackend::make(options("GPU-bbbb"));
    ASSERT_TRUE(made) << made.error().message();
    GpuBackend &b = **made;
    ASSERT_EQ(b.metrics().size(), GpuBackend::k_metrics_per_gpu) << "GPU 1 only";
    EXPECT_EQ(b.gpus_meta(), "1:GPU-bbbb");
    EXPECT_EQ(b.metrics()[0].name, "gpu1_utilisation");
    EXPECT_EQ(b.metrics()[6].name, "gpu1_energy");
    EXPECT_EQ(b.metrics()[6].unit, "J");
    EXPECT_EQ(b.metrics()[10].unit, "Hz");
    auto v = sample(b);
    EXPECT_EQ(b.status(), "");
    EXPECT_DOUBLE_EQ(v[0], 0);
    EXPECT_DOUBLE_EQ(v[3], 8000);
    EXPECT_DOUBLE_EQ(v[4], 300) << "the job's process 100; 999 is another's";
    EXPECT_DOUBLE_EQ(v[5], 30) << "W";
    EXPECT_DOUBLE_EQ(v[6], 0) << "energy from the start";
    EXPECT_DOUBLE_EQ(v[8], 40);
    EXPECT_DOUBLE_EQ(v[9], 300e6);
    // 10 J later, the job holds 300 of the 400 bytes: 7.5 J are its.
    write("gpu 0 GPU-aaaa 0\n"
          "gpu 1 GPU-bbbb 1 util=80 memutil=10 used=400 total=8000 power=60000 energy=10500 temp=41 sm=1400 mem=5000\n"
          "proc 1 100 300\nproc 1 999 100\n");
    v = sample(b);
    EXPECT_DOUBLE_EQ(v[0], 0.8);
    EXPECT_DOUBLE_EQ(v[6], 10);
    EXPECT_DOUBLE_EQ(v[7], 7.5);
}

TEST_F(GpuBackendTest, what_nvml_does_not_support_is_nan_with_the_reason)
{
    write("gpu 0 GPU-aaaa 0 util=5 memutil=1 used=10 total=100 power=- temp=30\n"
          "proc 0 100 na\n");
    auto made = GpuBackend::make(options());
    ASSERT_TRUE(made) << made.error().message();
    auto v = sample(**made);
    EXPECT_DOUBLE_EQ(v[0], 0.05);
    for (size_t i : {4, 5, 6, 7, 9, 10})
        EXPECT_TRUE(std::isnan(v[i])) << (*made)->metrics()[i].name;
    const std::string status((*made)->status());
    EXPECT_NE(status.find("gpu0 power: Not Supported"), std::string::npos) << status;
    EXPECT_NE(status.find("gpu0 energy: Not Supported"), std::string::npos) << status;
    EXPECT_NE(status.find("per-process memory not available"), std::string::npos) << status;
    EXPECT_NE((*made)->selection().source.find("not known"), std::string::npos);
}

TEST_F(GpuBackendTest, without_nvml_or_its_driver_the_backend_is_not_built)
{
    GpuOptions o = options();
    o.library = "libnvidia-ml-absent.so.1";
    auto absent = GpuBackend::make(o);
    ASSERT_FALSE(absent);
    EXPECT_NE(absent.error().message().find("cannot be loaded"), std::string::npos) << absent.error().message();
    write("gpu 0 GPU-aaaa 0 util=1 memutil=1 used=1 total=2\n");
    setenv("COLMET_FAKE_NVML_INIT", "fail", 1);
    auto failed = GpuBackend::make(options());
    ASSERT_FALSE(failed);
    EXPECT_NE(failed.error().message().find("nvmlInit: Driver Not Loaded"), std::string::npos)
        << failed.error().message();
    unsetenv("COLMET_FAKE_NVML_INIT");
    write("");
    auto none = GpuBackend::make(options());
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message().find("no GPU"), std::string::npos) << none.error().message();
}
