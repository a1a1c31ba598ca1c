#include "node/backends/support/backend_util.hpp"

#include "common/text.hpp"

#include <cerrno>
#include <limits>
#include <string>
#include <system_error>

namespace colmet::node::backends {

Result<std::filesystem::path> controller_dir(const cgroup::CgroupPaths &paths, std::string_view controller,
                                             std::string_view backend)
{
    auto dir = paths.dir_for(controller);
    if (dir.empty()) {
        std::string what = paths.version == cgroup::Version::v2
                               ? std::string("no cgroup v2 directory for the job")
                               : "no job directory in the " + std::string(controller) +
                                     " hierarchy (not mounted, or the scheduler made none there)";
        return Error(Errc::unsupported, std::string(backend) + ": " + what);
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return Error(Errc::not_found,
                     std::string(backend) + ": " + dir.string() + ": " +
                         std::string(errno_text(ec ? ec.value() : ENOTDIR)),
                     ec ? ec.value() : ENOTDIR);
    return dir;
}

Result<void> require_open(const KeptFile &file, std::string_view backend)
{
    if (file.is_open())
        return ok();
    Errc code = file.open_errno() == ENOENT ? Errc::not_found : Errc::system;
    return Error(code,
                 std::string(backend) + ": open " + file.path().string() + ": " +
                     std::string(errno_text(file.open_errno())),
                 file.open_errno());
}

std::optional<uint64_t> read_u64(KeptFile &file, StatusText &status) noexcept
{
    std::string_view text;
    if (!file.read(text, status))
        return std::nullopt;
    auto value = text::parse_u64(text);
    if (!value)
        status.item(file.name()).add(": not a number");
    return value;
}

void store(std::span<double> values, size_t index, std::optional<uint64_t> raw, double scale, StatusText &status,
           std::string_view file, std::string_view key) noexcept
{
    if (raw) {
        values[index] = static_cast<double>(*raw) * scale;
        return;
    }
    values[index] = std::numeric_limits<double>::quiet_NaN();
    status.item(file).add(": no ").add(key);
}

}  // namespace colmet::node::backends
