#include "FakeTree.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace colmet::test {

FakeTree::FakeTree()
{
    std::string tmpl = (std::filesystem::temp_directory_path() / "colmet-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
        throw std::runtime_error("mkdtemp failed");
    m_root = tmpl;
}

FakeTree::~FakeTree()
{
    std::error_code ec;
    std::filesystem::remove_all(m_root, ec);
}

void FakeTree::write(std::string_view rel, std::string_view content) const
{
    auto p = path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out)
        throw std::runtime_error("cannot write " + p.string());
}

void FakeTree::mkdir(std::string_view rel) const { std::filesystem::create_directories(path(rel)); }

void FakeTree::copy_fixture(std::string_view name, std::string_view dest) const
{
    auto to = path(dest);
    std::filesystem::create_directories(to);
    std::filesystem::copy(fixture(name), to,
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks |
                              std::filesystem::copy_options::overwrite_existing);
}

std::filesystem::path fixture(std::string_view rel) { return std::filesystem::path(COLMET_FIXTURES_DIR) / rel; }

bool is_root() { return geteuid() == 0; }

}  // namespace colmet::test
