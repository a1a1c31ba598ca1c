#include "node/backends/perfhw/MappingFile.hpp"

#include "common/unique_fd.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace colmet::node::backends::perfhw {

std::string mapping_csv(const std::vector<wire::MetricDescriptor> &metrics)
{
    std::string out;
    for (size_t i = 0; i < metrics.size(); ++i)
        out += "counter_" + std::to_string(i + 1) + "," + metrics[i].name + "\n";
    return out;
}

Result<std::filesystem::path> write_mapping_file(const std::filesystem::path &dir,
                                                 const std::vector<wire::MetricDescriptor> &metrics, int64_t now_ns)
{
    char name[64];
    std::snprintf(name, sizeof name, "perfhw_mapping.%lld.%06lld.csv", static_cast<long long>(now_ns / 1'000'000'000),
                  static_cast<long long>((now_ns / 1000) % 1'000'000));
    auto path = dir / name;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return Error::system("create", path.string(), errno);
    UniqueFd guard(fd);
    std::string text = mapping_csv(metrics);
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return Error::system("write", path.string(), errno);
    return path;
}

}  // namespace colmet::node::backends::perfhw
