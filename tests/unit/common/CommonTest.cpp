#include "common/clock.hpp"
#include "common/cpu_list.hpp"
#include "common/file_io.hpp"
#include "common/names.hpp"
#include "common/text.hpp"

#include "FakeTree.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include <vector>

using namespace colmet;

TEST(Names, sanitize_keeps_safe_ids_and_neutralises_hostile_ones)
{
    EXPECT_EQ(sanitize_name("123"), "123");
    EXPECT_EQ(sanitize_name("123_4"), "123_4");
    EXPECT_EQ(sanitize_name("123.0"), "123.0");
    EXPECT_EQ(sanitize_name("../../etc/x"), "_._.._etc_x");
    EXPECT_EQ(sanitize_name(".."), "_.");
    EXPECT_EQ(sanitize_name("."), "_");
    EXPECT_EQ(sanitize_name(""), "_");
    EXPECT_EQ(sanitize_name("a/b c\nd"), "a_b_c_d");
    EXPECT_EQ(sanitize_name(std::string("x\0y", 3)), "x_y");
    EXPECT_EQ(sanitize_name(std::string(500, 'j')).size(), k_max_id_length);
    for (std::string id : {"../x", "/", "..", ".hidden", "a/../../b"}) {
        auto name = sanitize_name(id);
        EXPECT_EQ(name.find('/'), std::string::npos) << id;
        EXPECT_NE(name.front(), '.') << id;
    }
}

TEST(Names, valid_identifier_rules)
{
    EXPECT_TRUE(valid_identifier("123_4"));
    EXPECT_TRUE(valid_identifier("alice job 1"));
    EXPECT_FALSE(valid_identifier(""));
    EXPECT_FALSE(valid_identifier("a/b"));
    EXPECT_FALSE(valid_identifier("tab\there"));
    EXPECT_FALSE(valid_identifier("caf\xc3\xa9"));
    EXPECT_FALSE(valid_identifier(std::string(129, 'x')));
    EXPECT_TRUE(valid_identifier(std::string(128, 'x')));
}

TEST(Text, numbers_and_lines)
{
    EXPECT_EQ(text::parse_u64(" 42\n"), 42u);
    EXPECT_EQ(text::parse_u64("18446744073709551615"), UINT64_MAX);
    EXPECT_FALSE(text::parse_u64("18446744073709551616"));
    EXPECT_FALSE(text::parse_u64("max"));
    EXPECT_FALSE(text::parse_u64("-1"));
    EXPECT_FALSE(text::parse_u64("12abc"));
    EXPECT_FALSE(text::parse_u64(""));
    EXPECT_EQ(text::parse_i64("-5"), -5);
    EXPECT_DOUBLE_EQ(*text::parse_double("0.25"), 0.25);
    std::vector<std::string_view> lines;
    for (auto l : text::Lines("a 1\nb 2\n\nc 3"))
        lines.push_back(l);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[3], "c 3");
    std::string_view k, v;
    ASSERT_TRUE(text::split_key_value("total_rss   4096", k, v));
    EXPECT_EQ(k, "total_rss");
    EXPECT_EQ(v, "4096");
    EXPECT_FALSE(text::split_key_value("lonely", k, v));
}

TEST(CpuList, parses_kernel_lists)
{
    EXPECT_EQ(*parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
    EXPECT_EQ(*parse_cpu_list("5"), (std::vector<int>{5}));
    EXPECT_TRUE(parse_cpu_list("\n")->empty());
    EXPECT_EQ(*parse_cpu_list("3,1-2,2"), (std::vector<int>{1, 2, 3}));
    EXPECT_FALSE(parse_cpu_list("3-1"));
    EXPECT_FALSE(parse_cpu_list("a-b"));
    EXPECT_FALSE(parse_cpu_list("0-99999999"));
}

TEST(Clock, aligned_instants)
{
    EXPECT_EQ(next_aligned(1'000, 1'000), 2'000);
    EXPECT_EQ(next_aligned(1'999, 1'000), 2'000);
    EXPECT_EQ(next_aligned(0, 5), 5);
    EXPECT_GT(realtime_ns(), int64_t{1'600'000'000} * 1'000'000'000);
}

TEST(FileIo, pread_all_grows_for_large_files_and_reports_errors)
{
    test::FakeTree tree;
    std::string big(10000, 'x');
    tree.write("big", big);
    auto fd = open_read(tree.path("big"));
    ASSERT_TRUE(fd);
    std::string buf;
    auto view = pread_all(fd->get(), buf, tree.path("big"));
    ASSERT_TRUE(view);
    EXPECT_EQ(view->size(), big.size());
    auto missing = read_file(tree.path("nope"));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code(), Errc::system);
    EXPECT_NE(missing.error().message().find("open " + tree.path("nope").string() + ": No such file"),
              std::string::npos);
}

TEST(FileIo, write_file_atomic_gives_the_whole_file_its_exact_mode_or_changes_nothing)
{
    test::FakeTree tree;
    const auto file = tree.path("record");
    const mode_t old_mask = ::umask(077);  // the mode asked for, whatever the umask
    auto written = write_file_atomic(file, "one\n", {0644, {}, true, {}});
    ::umask(old_mask);
    ASSERT_TRUE(written) << written.error().message();
    EXPECT_EQ(*read_file(file), "one\n");
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    EXPECT_FALSE(path_exists(tree.path("record.tmp")));

    // Replaced whole; a named temporary file.
    ASSERT_TRUE(write_file_atomic(file, "two\n", {0600, tree.path(".t"), true, {}}));
    EXPECT_EQ(*read_file(file), "two\n");
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_FALSE(path_exists(tree.path(".t")));

    // Not replacing: an existing file stays, the temporary file goes.
    auto kept = write_file_atomic(file, "three\n", {0644, {}, false, {}});
    ASSERT_FALSE(kept);
    EXPECT_EQ(kept.error().sys_errno(), EEXIST);
    EXPECT_EQ(*read_file(file), "two\n");
    EXPECT_FALSE(path_exists(tree.path("record.tmp")));

    // A step before the rename that fails stops it, and it is the error.
    int called = 0;
    auto stopped =
        write_file_atomic(file, "four\n", {0644, {}, true, [&called](const std::filesystem::path &tmp) -> Result<void> {
                                               ++called;
                                               EXPECT_EQ(*read_file(tmp), "four\n");  // complete before it
                                               return Error::invalid("no ACL here");
                                           }});
    ASSERT_FALSE(stopped);
    EXPECT_EQ(called, 1);
    EXPECT_EQ(stopped.error().message(), "no ACL here");
    EXPECT_EQ(*read_file(file), "two\n");
    EXPECT_FALSE(path_exists(tree.path("record.tmp")));

    // A temporary name that is a symlink is refused, not followed.
    ASSERT_EQ(::symlink(tree.path("elsewhere").c_str(), tree.path("record.tmp").c_str()), 0);
    auto refused = write_file_atomic(file, "five\n");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().sys_errno(), ELOOP);
    EXPECT_FALSE(path_exists(tree.path("elsewhere")));
    EXPECT_EQ(*read_file(file), "two\n");

    // A directory that is not there: an error naming the temporary file.
    auto nowhere = write_file_atomic(tree.path("no-dir/file"), "x");
    ASSERT_FALSE(nowhere);
    EXPECT_NE(nowhere.error().message().find("no-dir/file.tmp"), std::string::npos) << nowhere.error().message();
}

// --- the one naming rule of a job's files ------------------------------------
namespace colmet {
namespace {

TEST(JobFileNames, SchedulerIdsKeepTheirNames)
{
    for (const char *id : {"123", "123.4", "123_4", "run-20261202T124500-4242", "alice_42"})
        EXPECT_EQ(job_file_stem(id), id);
    EXPECT_EQ(job_file("/run/colmet", "123.4", JobFile::sampler_record), "/run/colmet/123.4.pid");
    EXPECT_EQ(job_file("/run/colmet", "123.4", JobFile::control_socket), "/run/colmet/123.4.ctl");
    EXPECT_EQ(job_file("/data", "123.4", JobFile::data), "/data/123.4.h5");
}

TEST(JobFileNames, HostileAndCollidingIdsNeverShareANameAndStayInTheirDirectory)
{
    std::vector<std::string> ids = {"a/b",
                                    "a_b",
                                    "a%2Fb",
                                    "a%b",
                                    "a:b",
                                    "a b",
                                    "..",
                                    ".",
                                    "_.",
                                    "%2E%2E",
                                    ".hidden",
                                    "_hidden",
                                    "a\\b",
                                    "a~b",
                                    "x",
                                    "X",
                                    std::string(128, 'a'),
                                    std::string(128, '/'),
                                    std::string(127, '/') + "a",
                                    std::string(128, '_'),
                                    std::string("\xc3\xa9t\xc3\xa9"),
                                    "_t_",
                                    std::string(1, '\0'),
                                    std::string("a\0b", 3),
                                    "a\nb",
                                    "a_b~0000000000000000"};
    // Long ids that differ only in their last byte, past and below the encoding limit.
    for (int unsafe : {30, 61, 62, 100})
        for (char last : {'a', 'b'})
            ids.push_back(std::string(static_cast<size_t>(unsafe), ':') +
                          std::string(127 - static_cast<size_t>(unsafe), 'x') + last);
    std::map<std::string, std::string> seen;
    for (const auto &id : ids) {
        const std::string stem = job_file_stem(id);
        ASSERT_FALSE(stem.empty()) << id;
        EXPECT_LE(stem.size() + 4, 255U) << id;  // ".pid" within NAME_MAX
        EXPECT_EQ(stem.find('/'), std::string::npos) << id;
        EXPECT_EQ(stem.find('\0'), std::string::npos) << id;
        EXPECT_NE(stem, ".");
        EXPECT_NE(stem, "..");
        EXPECT_NE(stem.front(), '.') << id;
        for (auto kind : {JobFile::sampler_record, JobFile::control_socket, JobFile::data}) {
            auto path = job_file("/run/colmet", id, kind);
            EXPECT_EQ(path.parent_path(), "/run/colmet") << id;
            EXPECT_EQ(path.lexically_normal().parent_path(), "/run/colmet") << id;
        }
        auto [it, fresh] = seen.emplace(stem, id);
        EXPECT_TRUE(fresh) << "'" << id << "' and '" << it->second << "' share the name " << stem;
    }
}

TEST(JobFileNames, EncodingIsPercentEncodingOfTheUnsafeBytes)
{
    EXPECT_EQ(job_file_stem("a/b"), "a%2Fb");
    EXPECT_EQ(job_file_stem(".."), "%2E.");
    EXPECT_EQ(job_file_stem("a%b"), "a%25b");
    EXPECT_EQ(job_file_stem("\xc3\xa9"), "%C3%A9");
    EXPECT_EQ(job_file_stem(std::string(80, ':')).size(), 240U);  // still encoded
    // Past 248 bytes encoded: the sanitized id and a hash, marked by '~'.
    std::string many(100, ':');
    std::string stem = job_file_stem(many);
    EXPECT_EQ(stem.substr(0, 100), std::string(100, '_'));
    EXPECT_EQ(stem[100], '~');
    EXPECT_EQ(stem.size(), 117U);
}

}  // namespace
}  // namespace colmet
