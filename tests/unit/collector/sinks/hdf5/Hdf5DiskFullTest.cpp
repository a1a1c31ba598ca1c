// Hdf5Sink on a real, small file system (a 4 MiB tmpfs): writing pauses
// below min_free_bytes and resumes; a disk that fills up anyway (no
// threshold) fails writes, and the sink drops that file's handle, goes on
// once space is freed, and leaves a readable file that counts what it lost.
// Needs root (mount); skipped otherwise.
#include "Hdf5TestUtil.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace colmet;
using namespace colmet::test::h5;

namespace {

constexpr int64_t k_mono_step = k_second;  // one second of the sink's clock per message

class Hdf5DiskFullTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (::geteuid() != 0)
            GTEST_SKIP() << "needs root to mount a small tmpfs (run the tests as root to cover a full disk)";
        char tmpl[] = "/tmp/colmet-diskfull-XXXXXX";
        if (!::mkdtemp(tmpl))
            GTEST_SKIP() << "mkdtemp: " << std::strerror(errno);
        m_mount = tmpl;
        if (::mount("tmpfs", m_mount.c_str(), "tmpfs", 0, "size=4m") != 0) {
            const int err = errno;
            ::rmdir(m_mount.c_str());
            m_mount.clear();
            GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(err)
                         << "): a container without CAP_SYS_ADMIN?";
        }
        m_dir = m_mount / "out";
    }

    void TearDown() override
    {
        if (m_mount.empty())
            return;
        ::umount2(m_mount.c_str(), MNT_DETACH);
        ::rmdir(m_mount.c_str());
    }

    uint64_t free_space() const
    {
        struct statvfs st {};
        ::statvfs(m_mount.c_str(), &st);
        return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    }

    // Fill the file system until `leave` bytes are free (or less).
    void fill(uint64_t leave)
    {
        std::ofstream f(m_mount / "filler", std::ios::binary | std::ios::app);
        const std::vector<char> block(size_t{16} * 1024, 'x');
        while (free_space() > leave && f.write(block.data(), static_cast<std::streamsize>(block.size())))
            f.flush();
    }

    void unfill() { std::filesystem::remove(m_mount / "filler"); }

    std::filesystem::path m_mount;
    std::filesystem::path m_dir;
};

// Values that do not compress (splitmix64), so that rows fill the disk.
double noise(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<double>((x ^ (x >> 31)) >> 11) / 9007199254740992.0;
}

BackendBlock wide_block(int i)
{
    std::vector<MetricDescriptor> metrics;
    std::vector<double> values;
    for (int k = 0; k < 200; ++k) {
        metrics.push_back({"m" + std::to_string(k), "1", MetricKind::gauge});
        values.push_back(noise(static_cast<uint64_t>(i) * 1000 + static_cast<uint64_t>(k)));
    }
    return block("wide", std::move(metrics), std::move(values));
}

Message wide_sample(int i)
{
    return message(MessageKind::sample, "full", "h", k_t0 + i * k_second, {wide_block(i), cpu_block(i, i, 0)});
}

// Every segment of a backend read whole (a chunk that cannot be read fails
// the test); returns the times of all its rows.
std::vector<int64_t> read_backend(const Reader &r, const std::string &backend)
{
    std::vector<int64_t> times;
    for (int seg = 0; r.exists("/hosts/h/" + backend + "/segment_" + std::to_string(seg)); ++seg) {
        const std::string path = "/hosts/h/" + backend + "/segment_" + std::to_string(seg);
        auto t = r.time(path);
        size_t cols = 0;
        auto v = r.values(path, &cols);
        EXPECT_EQ(v.size(), t.size() * cols) << path;
        times.insert(times.end(), t.begin(), t.end());
    }
    return times;
}

TEST_F(Hdf5DiskFullTest, writing_pauses_below_min_free_space_and_resumes_when_space_is_freed)
{
    auto o = options(m_dir);
    o.batch_rows = 16;
    o.min_free_bytes = 1ULL << 20;
    auto sink = make_sink(o);
    int i = 0;
    for (; i < 40; ++i)
        sink->consume(wide_sample(i), at((i + 1) * k_mono_step));
    const uint64_t written = sink->stats().rows_written;
    EXPECT_GT(written, 0u);

    fill(512ULL * 1024);
    for (; i < 240; ++i)
        sink->consume(wide_sample(i), at((i + 1) * k_mono_step));
    auto paused = sink->stats();
    EXPECT_TRUE(paused.writing_paused);
    EXPECT_EQ(paused.rows_written, written);
    EXPECT_EQ(paused.write_errors, 0u) << "paused before the disk was full";
    EXPECT_EQ(paused.rows_dropped, 0u) << "the rows wait in memory";

    unfill();
    sink->tick((i + 1) * k_mono_step + 10 * k_second);
    EXPECT_FALSE(sink->stats().writing_paused);
    sink->close_all();
    auto stats = sink->stats();
    EXPECT_EQ(stats.write_errors, 0u);
    EXPECT_EQ(stats.rows_written, 2u * 240);
    Reader r(job_file(m_dir, "full", JobFile::data));
    ASSERT_TRUE(r.ok());
    auto times = read_backend(r, "wide");
    ASSERT_EQ(times.size(), 240u);
    for (int k = 0; k < 240; ++k)
        ASSERT_EQ(times[static_cast<size_t>(k)], k_t0 + k * k_second) << k;
    EXPECT_FALSE(r.has_attr("/hosts/h", "rows_dropped"));
}

TEST_F(Hdf5DiskFullTest, a_full_disk_is_survived_and_the_file_stays_readable)
{
    auto o = options(m_dir);
    o.batch_rows = 16;
    o.min_free_bytes = 0;  // no pause: the writes themselves run out of space
    auto sink = make_sink(o);
    int i = 0;
    for (; i < 40; ++i)
        sink->consume(wide_sample(i), at((i + 1) * k_mono_step));
    fill(200ULL * 1024);
    for (; i < 4000 && sink->stats().files_abandoned == 0; ++i)
        sink->consume(wide_sample(i), at((i + 1) * k_mono_step));
    ASSERT_GT(sink->stats().write_errors, 0u)
        << "the disk never filled up: " << sink->stats().rows_written << " rows, " << free_space() << " bytes free";
    const int failed_at = i;
    for (int k = 0; k < 50; ++k, ++i)  // more rows into the full disk
        sink->consume(wide_sample(i), at((i + 1) * k_mono_step));

    unfill();
    const int resumed_at = i + 60;  // after the retry delay
    for (; i < resumed_at + 100; ++i)
        sink->consume(wide_sample(i), at((i + 1) * k_mono_step));
    sink->close_all();
    auto stats = sink->stats();
    EXPECT_GE(stats.files_abandoned, 1u);
    EXPECT_GT(stats.rows_dropped, 0u);

    auto file = job_file(m_dir, "full", JobFile::data);
    Reader r(file);
    ASSERT_TRUE(r.ok());
    auto times = read_backend(r, "wide");
    auto cpu = read_backend(r, "cgroup_cpu");
    const uint64_t dropped = static_cast<uint64_t>(r.i64("/hosts/h", "rows_dropped"));
    EXPECT_EQ(dropped, stats.rows_dropped) << "every dropped row is recorded in the file";
    EXPECT_GE(times.size() + cpu.size() + dropped, 2u * static_cast<uint64_t>(i)) << "no row vanished uncounted";
    EXPECT_GT(times.size(), static_cast<size_t>(failed_at) / 2);
    // Every row sent once space was back (and the retry delay past) is there.
    for (int k = resumed_at; k < i; ++k)
        EXPECT_NE(std::find(times.begin(), times.end(), k_t0 + k * k_second), times.end()) << k;
    r.close();

    auto run = [](const std::string &command) {
        int status = std::system(command.c_str());
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    if (run("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0)
        return;  // h5py is optional (apt install python3-h5py)
    const std::string script = "import h5py, sys\n"
                               "with h5py.File(sys.argv[1], 'r') as f:\n"
                               "    def visit(name, obj):\n"
                               "        if isinstance(obj, h5py.Dataset):\n"
                               "            obj[()]\n"
                               "    f.visititems(visit)\n";
    const std::filesystem::path py = m_mount / "check.py";
    std::ofstream(py) << script;
    EXPECT_EQ(run("/usr/bin/python3 '" + py.string() + "' '" + file.string() + "'"), 0) << "h5py reads every dataset";
}

}  // namespace
