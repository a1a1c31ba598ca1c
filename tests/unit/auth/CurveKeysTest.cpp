#include "auth/CurveKeys.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace colmet;
using namespace colmet::auth;

namespace {

struct TempDir {
    std::filesystem::path path;
    TempDir()
    {
        char tmpl[] = "/tmp/colmet-keys-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

void write(const std::filesystem::path &p, const std::string &text, mode_t mode)
{
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
}

}  // namespace

TEST(CurveKeys, a_generated_pair_round_trips_through_its_file)
{
    auto pair = generate_key_pair();
    ASSERT_TRUE(pair) << pair.error().message();
    EXPECT_TRUE(is_z85_key(pair->public_key));
    EXPECT_TRUE(is_z85_key(pair->secret_key));
    auto parsed = parse_key_pair(format_key_pair_file(*pair, "node042"), "k");
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(parsed->public_key, pair->public_key);
    EXPECT_EQ(parsed->secret_key, pair->secret_key);

    auto pub = parse_public_keys(format_public_key_file("node042", pair->public_key), "p");
    ASSERT_TRUE(pub) << pub.error().message();
    ASSERT_EQ(pub->size(), 1u);
    EXPECT_EQ(pub->front().name, "node042");
    EXPECT_EQ(pub->front().public_key, pair->public_key);
}

TEST(CurveKeys, z85_checks_length_and_alphabet)
{
    auto pair = generate_key_pair();
    ASSERT_TRUE(pair);
    EXPECT_FALSE(is_z85_key(pair->public_key.substr(1)));
    EXPECT_FALSE(is_z85_key(pair->public_key + "0"));
    EXPECT_FALSE(is_z85_key(std::string(40, ' ')));  // not in Z85's alphabet
    std::string cut = pair->public_key;              // a NUL would end ZeroMQ's C string after 5 characters
    cut[5] = '\0';
    EXPECT_FALSE(is_z85_key(cut));
    EXPECT_FALSE(is_z85_key(""));
    EXPECT_EQ(z85_of("short"), "");
    EXPECT_EQ(z85_of(std::string(32, '\0')).size(), k_z85_key_length);
}

TEST(CurveKeys, a_key_pair_file_is_refused_with_the_line_and_reason)
{
    auto a = generate_key_pair();
    auto b = generate_key_pair();
    ASSERT_TRUE(a && b);
    auto err = [](const std::string &text) {
        auto r = parse_key_pair(text, "f.key");
        return r ? std::string("accepted") : r.error().message();
    };
    EXPECT_EQ(err("public-key = " + a->public_key + "\n"),
              "f.key: a key-pair file needs both public-key and secret-key (made by colmet-keygen)");
    EXPECT_EQ(err("# c\n\npublic-key = xyz\n"), "f.key:3: public-key is not a 40-character Z85 CURVE key");
    EXPECT_EQ(err("colour = blue\n"), "f.key:1: expected 'public-key = <key>' or 'secret-key = <key>'");
    EXPECT_EQ(err("public-key = " + a->public_key + "\npublic-key = " + a->public_key + "\n"),
              "f.key:2: public-key is given twice");
    // Halves of two different pairs: every handshake would fail.
    EXPECT_EQ(err("public-key = " + a->public_key + "\nsecret-key = " + b->secret_key + "\n"),
              "f.key: public-key does not belong to secret-key");
}

TEST(CurveKeys, a_public_key_file_is_refused_with_the_line_and_reason)
{
    auto a = generate_key_pair();
    ASSERT_TRUE(a);
    auto err = [](const std::string &text) {
        auto r = parse_public_keys(text, "n.pub");
        return r ? std::string("accepted") : r.error().message();
    };
    EXPECT_EQ(err("# only comments\n"), "n.pub: no '<host> <public key>' line");
    EXPECT_EQ(err(a->public_key + "\n"), "n.pub:1: expected '<host> <public key>'");
    EXPECT_EQ(err("node1 notakey\n"), "n.pub:1: 'notakey' is not a 40-character Z85 CURVE public key");
    EXPECT_EQ(err("a=b " + a->public_key + "\n"), "n.pub:1: 'a=b' is not a host name");
    EXPECT_EQ(err("node1\t" + a->public_key + "  \nnode2 " + a->public_key + "\n"), "accepted");
}

TEST(CurveKeys, a_secret_key_readable_by_others_is_refused)
{
    TempDir dir;
    auto pair = generate_key_pair();
    ASSERT_TRUE(pair);
    auto path = dir.path / "node.key";
    write(path, format_key_pair_file(*pair, "n"), 0640);
    auto r = read_key_pair_file(path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(), path.string() +
                                       ": a secret key must be readable by its owner only (mode 640); "
                                       "run: chmod 600 " +
                                       path.string());
    ::chmod(path.c_str(), 0600);
    EXPECT_TRUE(read_key_pair_file(path));
    auto missing = read_key_pair_file(dir.path / "none.key");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().sys_errno(), ENOENT);
}

TEST(CurveKeys, key_files_are_made_with_their_mode_and_never_replaced_without_force)
{
    TempDir dir;
    auto path = dir.path / "collector.key";
    ASSERT_TRUE(write_key_file(path, "one\n", 0600, false));
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto again = write_key_file(path, "two\n", 0600, false);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().message(), path.string() + " exists; give --force to replace it");
    ASSERT_TRUE(write_key_file(path, "two\n", 0644, true));
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    // Nothing left behind but the file itself.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()), 1);
}

TEST(CurveKeys, the_server_key_is_the_first_key_of_a_public_key_file)
{
    TempDir dir;
    auto a = generate_key_pair();
    auto b = generate_key_pair();
    ASSERT_TRUE(a && b);
    write(dir.path / "c.pub", "# collector\ncoll " + a->public_key + "\nother " + b->public_key + "\n", 0644);
    auto key = read_server_key_file(dir.path / "c.pub");
    ASSERT_TRUE(key) << key.error().message();
    EXPECT_EQ(*key, a->public_key);
}
