// Who may read a job's file: the hdf5-owner rule, the ACL entry for the job's
// user, the modes of files and of the output directory.
#include "Hdf5TestUtil.hpp"

#include "FakeTree.hpp"
#include "collector/sinks/hdf5/FileAccess.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace colmet;
using namespace colmet::test::h5;
using collector::hdf5::FileOwner;

namespace {

mode_t mode_of(const std::filesystem::path &p)
{
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
}

class FileAccessTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        const passwd *pw = getpwnam("nobody");
        if (!pw)
            GTEST_SKIP() << "no user 'nobody' on this machine";
        m_nobody = pw->pw_uid;
        if (m_nobody == ::geteuid())
            GTEST_SKIP() << "running as 'nobody': its files need no ACL entry";
        auto probe = m_tree.path("probe");
        std::ofstream(probe) << "x";
        if (auto r = collector::hdf5::grant_read(probe, "nobody"); !r && r.error().code() == Errc::unsupported)
            GTEST_SKIP() << "the test directory's file system has no POSIX ACLs: " << r.error().message();
    }

    Message start_of(const std::string &job, const std::string &user)
    {
        Message m = job_start(job, "node-1", k_t0, "1");
        for (auto &[k, v] : m.meta)
            if (k == "user")
                v = user;
        return m;
    }

    test::FakeTree m_tree;
    uid_t m_nobody = 0;
};

TEST(FileOwnerNames, parse_and_name_are_one_table)
{
    for (auto owner : {FileOwner::job_user, FileOwner::collector})
        EXPECT_EQ(collector::hdf5::parse_file_owner(collector::hdf5::file_owner_name(owner)), owner);
    EXPECT_EQ(collector::hdf5::parse_file_owner("job-user"), FileOwner::job_user);
    EXPECT_FALSE(collector::hdf5::parse_file_owner("group"));
    EXPECT_FALSE(collector::hdf5::parse_file_owner(""));
    EXPECT_EQ(collector::hdf5::file_owner_names(), "job-user, collector");
}

TEST_F(FileAccessTest, grant_read_adds_the_user_and_nobody_else)
{
    auto file = m_tree.path("f");
    std::ofstream(file) << "x";
    ::chmod(file.c_str(), 0600);
    ASSERT_TRUE(collector::hdf5::grant_read(file, "nobody"));
    auto users = collector::hdf5::acl_users(file);
    ASSERT_TRUE(users) << users.error().message();
    EXPECT_EQ(*users, std::vector<uid_t>{m_nobody});
    EXPECT_EQ(mode_of(file), 0640u) << "owner rw, mask r (the named user and the group), others nothing";
}

TEST_F(FileAccessTest, an_unknown_user_is_not_found_and_the_file_is_unchanged)
{
    auto file = m_tree.path("f");
    std::ofstream(file) << "x";
    ::chmod(file.c_str(), 0600);
    auto r = collector::hdf5::grant_read(file, "colmet-no-such-user-here");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::not_found);
    EXPECT_NE(r.error().message().find("unknown on the collector's host"), std::string::npos);
    EXPECT_TRUE(collector::hdf5::acl_users(file)->empty());
    EXPECT_EQ(mode_of(file), 0600u);
}

TEST_F(FileAccessTest, the_sink_shares_a_job_file_with_the_user_of_its_job_start)
{
    auto dir = m_tree.path("out-job-user");
    auto sink = make_sink(options(dir));
    EXPECT_EQ(mode_of(dir), 0711u) << "users reach their files by name, list nothing";
    sink->consume(start_of("7", "nobody"), at(1));
    // Another host naming another user changes nothing.
    Message other = start_of("7", "root");
    other.host = other.sender = "node-2";
    sink->consume(other, at(2));
    sink->close_all();
    auto file = job_file(dir, "7", JobFile::data);
    EXPECT_EQ(*collector::hdf5::acl_users(file), std::vector<uid_t>{m_nobody});
    EXPECT_EQ(mode_of(file), 0640u);
    EXPECT_EQ(sink->stats().files_shared, 1u);
    EXPECT_EQ(sink->stats().share_errors, 0u);
}

TEST_F(FileAccessTest, with_hdf5_owner_collector_no_user_is_added)
{
    auto o = options(m_tree.path("out-collector"));
    o.owner = FileOwner::collector;
    auto sink = make_sink(o);
    EXPECT_EQ(mode_of(o.dir), 0750u);
    sink->consume(start_of("8", "nobody"), at(1));
    sink->close_all();
    auto file = job_file(o.dir, "8", JobFile::data);
    EXPECT_TRUE(collector::hdf5::acl_users(file)->empty());
    EXPECT_EQ(mode_of(file), 0640u);
    EXPECT_EQ(sink->stats().files_shared, 0u);
}

TEST_F(FileAccessTest, a_file_made_before_its_user_is_known_is_shared_when_the_user_arrives)
{
    auto dir = m_tree.path("out-late");
    auto sink = make_sink(options(dir));
    // A sample first (the collector restarted mid-job): no user yet.
    sink->consume(message(MessageKind::sample, "9", "node-1", k_t0, {cpu_block(1, 1, 0)}), at(1));
    auto file = job_file(dir, "9", JobFile::data);
    ASSERT_TRUE(std::filesystem::exists(file));
    EXPECT_TRUE(collector::hdf5::acl_users(file)->empty());
    EXPECT_EQ(mode_of(file), 0640u);
    sink->consume(start_of("9", "nobody"), at(2));
    EXPECT_EQ(*collector::hdf5::acl_users(file), std::vector<uid_t>{m_nobody});
    sink->close_all();
}

TEST_F(FileAccessTest, the_summary_json_beside_a_file_is_as_private_as_the_file)
{
    for (FileOwner owner : {FileOwner::job_user, FileOwner::collector}) {
        auto o = options(m_tree.path(owner == FileOwner::job_user ? "json-user" : "json-collector"));
        o.owner = owner;
        auto sink = make_sink(o);
        sink->consume(start_of("10", "nobody"), at(1));
        sink->consume(message(MessageKind::job_end, "10", "node-1", k_t0 + 1'000'000'000, {cpu_block(1, 1, 0)}), at(2));
        sink->close_all();
        auto json = job_file(o.dir, "10", JobFile::summary);
        ASSERT_TRUE(std::filesystem::exists(json)) << json;
        EXPECT_EQ(mode_of(json), 0640u);
        const std::vector<uid_t> readers =
            owner == FileOwner::job_user ? std::vector<uid_t>{m_nobody} : std::vector<uid_t>{};
        EXPECT_EQ(*collector::hdf5::acl_users(json), readers) << file_owner_name(owner);
        auto s = collector::read_summary_file(json);
        ASSERT_TRUE(s.ok()) << s.error().message();
        EXPECT_EQ(s->job_id, "10");
        EXPECT_EQ(s->file, job_file(o.dir, "10", JobFile::data));
        // Nothing but the file and its summary: no temporary file left.
        EXPECT_EQ(std::distance(std::filesystem::directory_iterator(o.dir), std::filesystem::directory_iterator()), 2);
    }
}

}  // namespace
