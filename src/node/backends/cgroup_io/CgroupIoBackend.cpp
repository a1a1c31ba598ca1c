#include "node/backends/cgroup_io/CgroupIoBackend.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/cgroup_io/io_parsers.hpp"
#include "node/backends/support/CgroupFileBackend.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/backend_util.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>

namespace colmet::node::backends {
namespace {

constexpr std::string_view k_name = "cgroup_io";
enum Index : size_t { k_read_bytes, k_write_bytes, k_read_ops, k_write_ops };

struct IoFiles {
    bool v2 = false;
    KeptFile io_stat;   // v2
    KeptFile bytes;     // v1 blkio.throttle.io_service_bytes[_recursive]
    KeptFile serviced;  // v1 blkio.throttle.io_serviced[_recursive]
};

class CgroupIoBackend final : public VersionedCgroupBackend {
public:
    explicit CgroupIoBackend(IoFiles files) : VersionedCgroupBackend(files.v2), m_f(std::move(files)) {}

    std::string_view name() const override { return k_name; }
    const std::vector<wire::MetricDescriptor> &metrics() const override { return cgroup_io_metrics(); }

private:
    // NOLINTNEXTLINE(bugprone-exception-escape): only std::bad_alloc, building an error message
    void sample_v1(std::span<double> values) noexcept override
    {
        read_blkio(m_f.bytes, values, k_read_bytes, k_write_bytes);
        read_blkio(m_f.serviced, values, k_read_ops, k_write_ops);
    }

    // NOLINTNEXTLINE(bugprone-exception-escape): only std::bad_alloc, building an error message
    void read_blkio(KeptFile &file, std::span<double> values, size_t read, size_t write) noexcept
    {
        std::string_view text;
        if (!file.read(text, m_problems))
            return;
        auto totals = parse_blkio_throttle(text);
        if (!totals) {
            m_problems.item(file.name()).add(": ").add(totals.error().message());
            return;
        }
        values[read] = static_cast<double>(totals->read);
        values[write] = static_cast<double>(totals->write);
    }

    // NOLINTNEXTLINE(bugprone-exception-escape): only std::bad_alloc, building an error message
    void sample_v2(std::span<double> values) noexcept override
    {
        std::string_view text;
        if (!m_f.io_stat.read(text, m_problems))
            return;
        auto st = parse_io_stat(text);
        if (!st) {
            m_problems.item("io.stat: ").add(st.error().message());
            return;
        }
        values[k_read_bytes] = static_cast<double>(st->rbytes);
        values[k_write_bytes] = static_cast<double>(st->wbytes);
        values[k_read_ops] = static_cast<double>(st->rios);
        values[k_write_ops] = static_cast<double>(st->wios);
    }

    IoFiles m_f;
};

// The hierarchical file when the kernel has it, else the cgroup's own.
KeptFile open_either(const std::filesystem::path &dir, std::string_view recursive, std::string_view plain)
{
    KeptFile file(dir, recursive);
    if (file.is_open())
        return file;
    KeptFile fallback(dir, plain);
    return fallback.is_open() ? std::move(fallback) : std::move(file);
}

}  // namespace

const std::vector<wire::MetricDescriptor> &cgroup_io_metrics()
{
    using wire::MetricKind;
    static const std::vector<wire::MetricDescriptor> k_metrics = {
        {"read_bytes", "B", MetricKind::counter},
        {"write_bytes", "B", MetricKind::counter},
        {"read_ops", "1", MetricKind::counter},
        {"write_ops", "1", MetricKind::counter},
    };
    return k_metrics;
}

Result<std::unique_ptr<MetricBackend>> make_cgroup_io_backend(const JobContext &ctx)
{
    IoFiles f;
    f.v2 = ctx.cgroup.version == cgroup::Version::v2;
    auto dir = controller_dir(ctx.cgroup, f.v2 ? "io" : "blkio", k_name);
    if (!dir)
        return dir.error();
    if (f.v2) {
        f.io_stat = KeptFile(*dir, "io.stat");
        if (!f.io_stat.is_open() && f.io_stat.open_errno() == ENOENT)
            return Error(Errc::unsupported,
                         std::string(k_name) + ": io controller not enabled for " + dir->string() + " (no io.stat)");
        if (auto r = require_open(f.io_stat, k_name); !r)
            return r.error();
    } else {
        f.bytes = open_either(*dir, "blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes");
        f.serviced = open_either(*dir, "blkio.throttle.io_serviced_recursive", "blkio.throttle.io_serviced");
        if (!f.bytes.is_open() && !f.serviced.is_open())
            return require_open(f.bytes, k_name).error();
    }
    auto backend = std::make_unique<CgroupIoBackend>(std::move(f));
    backend->set_cgroup_dirs({*dir});
    return std::unique_ptr<MetricBackend>(std::move(backend));
}

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_cgroup_io_factory;
constexpr BackendFactory k_cgroup_io_factory =
    job_backend_factory(*spec::backend_info("cgroup_io"), &make_cgroup_io_backend);

}  // namespace colmet::node::backends
