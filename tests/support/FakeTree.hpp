// A temporary directory tree for tests: created under $TMPDIR, removed in the
// destructor. write("a/b/file", "content") creates parent directories.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace colmet::test {

class FakeTree {
public:
    FakeTree();
    ~FakeTree();
    FakeTree(const FakeTree &) = delete;
    FakeTree &operator=(const FakeTree &) = delete;

    const std::filesystem::path &root() const { return m_root; }
    std::filesystem::path path(std::string_view rel) const { return m_root / rel; }
    void write(std::string_view rel, std::string_view content) const;
    void mkdir(std::string_view rel) const;
    // Copy a checked-in fixture tree (tests/fixtures/<name>) into this tree.
    void copy_fixture(std::string_view name, std::string_view dest = "") const;

private:
    std::filesystem::path m_root;
};

// Path of a checked-in fixture (tests/fixtures/<rel>).
std::filesystem::path fixture(std::string_view rel);

// True when running as root (tests that need real cgroups check this and
// GTEST_SKIP() with a reason otherwise).
bool is_root();

}  // namespace colmet::test
