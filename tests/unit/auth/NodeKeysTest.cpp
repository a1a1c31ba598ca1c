#include "auth/NodeKeys.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace colmet;
using namespace colmet::auth;

namespace {

struct NodesDir {
    std::filesystem::path path;
    NodesDir()
    {
        char tmpl[] = "/tmp/colmet-nodes-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~NodesDir() { std::filesystem::remove_all(path); }
    void put(const std::string &name, const std::string &text, mode_t mode = 0644) const
    {
        std::ofstream(path / name) << text;
        ::chmod((path / name).c_str(), mode);
    }
};

std::string key()
{
    auto pair = generate_key_pair();
    return pair ? pair->public_key : std::string();
}

}  // namespace

TEST(NodeKeys, binds_every_key_to_the_hosts_it_is_listed_with)
{
    NodesDir dir;
    const auto k1 = key(), k2 = key(), shared = key();
    dir.put("node1.pub", "node1 " + k1 + "\n");
    dir.put("rack2", "# rack 2 shares one key\nnode2 " + shared + "\nnode3 " + shared + "\nnode4 " + k2 + "\n");
    auto keys = NodeKeys::load(dir.path);
    ASSERT_TRUE(keys) << keys.error().message();
    EXPECT_EQ(keys->files(), 2u);
    EXPECT_EQ(keys->keys(), 3u);
    EXPECT_TRUE(keys->allows(k1, "node1"));
    EXPECT_FALSE(keys->allows(k1, "node2"));
    EXPECT_TRUE(keys->allows(shared, "node2"));
    EXPECT_TRUE(keys->allows(shared, "node3"));
    EXPECT_FALSE(keys->allows(shared, "node4"));
    EXPECT_FALSE(keys->allows(key(), "node1"));
    EXPECT_FALSE(keys->allows("", "node1"));
    EXPECT_TRUE(keys->knows(k2));
}

TEST(NodeKeys, skips_hidden_files_and_editor_or_package_leftovers)
{
    NodesDir dir;
    const auto k1 = key();
    dir.put("node1.pub", "node1 " + k1 + "\n");
    for (auto name : {".hidden", "node1.pub~", "node1.pub.dpkg-old", "node1.pub.rpmnew", ".node1.pub.swp"})
        dir.put(name, "this is not a key file\n");
    auto keys = NodeKeys::load(dir.path);
    ASSERT_TRUE(keys) << keys.error().message();
    EXPECT_EQ(keys->files(), 1u);
}

TEST(NodeKeys, refuses_a_bad_file_an_open_file_or_no_key_at_all)
{
    NodesDir dir;
    auto load_error = [&] {
        auto keys = NodeKeys::load(dir.path);
        return keys ? std::string("loaded") : keys.error().message();
    };
    EXPECT_EQ(load_error(), dir.path.string() + ": no node key file (make them with colmet-keygen --host NAME)");
    dir.put("a.pub", "node1 " + key() + "\n");
    EXPECT_EQ(load_error(), "loaded");
    dir.put("b.pub", "node2 " + key() + "\n", 0666);
    EXPECT_EQ(load_error(), (dir.path / "b.pub").string() + ": writable by group or others; run: chmod go-w " +
                                (dir.path / "b.pub").string());
    dir.put("b.pub", "node2 nokey\n", 0644);
    EXPECT_EQ(load_error(), (dir.path / "b.pub").string() + ":1: 'nokey' is not a 40-character Z85 CURVE public key");
    auto missing = NodeKeys::load(dir.path / "absent");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().sys_errno(), ENOENT);
}
