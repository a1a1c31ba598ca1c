#include "JobMarker.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace colmet::spank {

namespace fs = std::filesystem;

fs::path marker_path(const fs::path &run_dir, uint32_t job_id)
{
    return run_dir / ("slurm-" + std::to_string(job_id) + ".colmet");
}

Result<void> write_marker(const fs::path &run_dir, uint32_t job_id, const std::string &spec)
{
    if (::mkdir(run_dir.c_str(), 0755) != 0 && errno != EEXIST)
        return Error::system("mkdir", run_dir, errno);
    fs::path final_path = marker_path(run_dir, job_id);
    fs::path tmp = final_path;
    tmp += ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return Error::system("open", tmp, errno);
    std::string content = spec + "\n";
    ssize_t n = ::write(fd, content.data(), content.size());
    int werr = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(content.size())) {
        ::unlink(tmp.c_str());
        return Error::system("write", tmp, n < 0 ? werr : EIO);
    }
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        return Error::system("rename", final_path, err);
    }
    return ok();
}

std::optional<std::string> read_marker(const fs::path &run_dir, uint32_t job_id)
{
    fs::path p = marker_path(run_dir, job_id);
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return std::nullopt;
    std::string out;
    char buf[4200];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n < 0)
        return std::nullopt;
    out.assign(buf, static_cast<size_t>(n));
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
        out.pop_back();
    return out;
}

namespace {
fs::path context_claim_path(const fs::path &run_dir, uint32_t job_id)
{
    return run_dir / ("slurm-" + std::to_string(job_id) + ".context");
}
}  // namespace

bool claim_context(const fs::path &run_dir, uint32_t job_id)
{
    fs::path p = context_claim_path(run_dir, job_id);
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return errno != EEXIST;
    ::close(fd);
    return true;
}

Result<void> remove_marker(const fs::path &run_dir, uint32_t job_id)
{
    fs::path claim = context_claim_path(run_dir, job_id);
    if (::unlink(claim.c_str()) != 0 && errno != ENOENT)
        return Error::system("unlink", claim, errno);
    fs::path p = marker_path(run_dir, job_id);
    if (::unlink(p.c_str()) != 0 && errno != ENOENT)
        return Error::system("unlink", p, errno);
    return ok();
}

std::vector<std::string> leftover_step_samplers(const fs::path &run_dir, uint32_t job_id)
{
    std::vector<std::string> ids;
    std::string prefix = std::to_string(job_id) + ".";
    std::error_code ec;
    for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (name.size() <= prefix.size() + 4 || name.compare(0, prefix.size(), prefix) != 0 ||
            name.compare(name.size() - 4, 4, ".pid") != 0)
            continue;
        std::string step = name.substr(prefix.size(), name.size() - prefix.size() - 4);
        if (step.empty() || step.find_first_not_of("0123456789") != std::string::npos)
            continue;
        ids.push_back(prefix + step);
    }
    return ids;
}

}  // namespace colmet::spank
