#include "node/backends/support/MappingCsv.hpp"

#include "common/unique_fd.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace colmet::node::backends {

std::string mapping_file_name(std::string_view prefix, int64_t now_ns)
{
    char stamp[48];
    std::snprintf(stamp, sizeof stamp, ".%lld.%06lld.csv", static_cast<long long>(now_ns / 1'000'000'000),
                  static_cast<long long>((now_ns / 1000) % 1'000'000));
    return std::string(prefix) + stamp;
}

Result<std::filesystem::path> write_mapping_file(const std::filesystem::path &dir, std::string_view prefix,
                                                 int64_t now_ns, std::string_view content)
{
    auto path = dir / mapping_file_name(prefix, now_ns);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return Error::system("create", path.string(), errno);
    UniqueFd guard(fd);
    if (::write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size()))
        return Error::system("write", path.string(), errno);
    return path;
}

void write_mapping_logged(const std::string &dir, std::string_view prefix, int64_t now_ns, std::string_view content)
{
    if (dir.empty())
        return;
    if (auto file = write_mapping_file(dir, prefix, now_ns, content))
        spdlog::info("{} written to {}", prefix, file->string());
    else
        spdlog::warn("{} file: {}", prefix, file.error().message());
}

}  // namespace colmet::node::backends
