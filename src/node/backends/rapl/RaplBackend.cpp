#include "node/backends/rapl/RaplBackend.hpp"

#include "node/backends/BackendFactory.hpp"
#include "node/backends/rapl/RaplMapping.hpp"
#include "node/backends/support/KeptFile.hpp"
#include "node/backends/support/MappingCsv.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace colmet::node::backends::rapl {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

int default_perf_open(uint32_t type, uint64_t config, int cpu)
{
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    long fd = ::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd >= 0 ? static_cast<int>(fd) : -errno;
}

bool default_perf_read(int fd, uint64_t &count)
{
    return ::read(fd, &count, sizeof count) == static_cast<ssize_t>(sizeof count);
}

bool is_permission(int err) { return err == EACCES || err == EPERM; }

}  // namespace

RaplBackend::RaplBackend(Source source, std::vector<RaplDomain> domains, const RaplIo &io)
    : m_source(source), m_domains(std::move(domains)), m_io(io)
{
    if (!m_io.perf_open)
        m_io.perf_open = &default_perf_open;
    if (!m_io.perf_read)
        m_io.perf_read = &default_perf_read;
    m_channels.resize(m_domains.size());
    size_t denied = 0;
    std::string others;
    for (size_t i = 0; i < m_domains.size(); ++i) {
        const auto &d = m_domains[i];
        m_metrics.push_back({d.metric, "J", wire::MetricKind::counter});
        auto &ch = m_channels[i];
        int err = 0;
        if (m_source == Source::powercap) {
            ch.file = NumberFile(d.dir / "energy_uj", m_io.open_file);
            if (ch.file.is_open()) {
                if (auto e = ch.file.read_u64()) {  // the baseline: energy counts from here
                    ch.prev_uj = *e;
                    ch.have_prev = true;
                }
            } else {
                err = ch.file.error();
            }
        } else {
            int fd = m_io.perf_open(d.type, d.config, d.cpu);
            if (fd >= 0)
                ch.perf.reset(fd);
            else
                err = ch.open_errno = -fd;
        }
        if (err == 0)
            continue;
        if (is_permission(err)) {
            ++denied;
        } else {
            others += (others.empty() ? "" : "; ") + d.metric + ": " + std::string(errno_text(err));
        }
    }
    if (denied > 0) {
        m_open_problems = m_source == Source::powercap
                              ? "permission: energy_uj is readable by root only (Linux >= 5.10)"
                              : "permission: perf power events need root or CAP_PERFMON (perf_event_paranoid)";
        m_open_problems +=
            "; " + std::to_string(denied) + " of " + std::to_string(m_domains.size()) + " domains are NaN";
    }
    if (!others.empty())
        m_open_problems += (m_open_problems.empty() ? "" : "; ") + others;
}

size_t RaplBackend::opened() const
{
    size_t n = 0;
    for (const auto &ch : m_channels)
        n += (m_source == Source::powercap ? ch.file.is_open() : ch.perf.valid()) ? 1 : 0;
    return n;
}

void RaplBackend::sample_powercap(size_t i, double &value, size_t &denied) noexcept
{
    auto &ch = m_channels[i];
    auto e = ch.file.read_u64();
    if (!e) {
        value = k_nan;
        if (is_permission(ch.file.error()))
            ++denied;
        else
            m_problems.item(m_domains[i].metric).add(": ").add(errno_text(ch.file.error()));
        return;
    }
    if (ch.have_prev) {
        const uint64_t max = m_domains[i].max_range_uj;
        uint64_t delta = 0;
        if (*e >= ch.prev_uj)
            delta = *e - ch.prev_uj;
        else if (max >= ch.prev_uj)
            delta = max - ch.prev_uj + *e;  // the counter wrapped at max_energy_range_uj
        else
            m_problems.item(m_domains[i].metric).add(": energy_uj went back without max_energy_range_uj");
        ch.total_uj += delta;
    }
    ch.prev_uj = *e;
    ch.have_prev = true;
    value = static_cast<double>(ch.total_uj) * 1e-6;
}

void RaplBackend::sample_perf(size_t i, double &value) noexcept
{
    auto &ch = m_channels[i];
    value = k_nan;
    if (!ch.perf.valid())
        return;
    uint64_t count = 0;
    if (!m_io.perf_read(ch.perf.get(), count)) {
        m_problems.item(m_domains[i].metric).add(": read: ").add(errno_text(errno));
        return;
    }
    value = static_cast<double>(count) * m_domains[i].scale;
}

void RaplBackend::sample(std::span<double> values) noexcept
{
    m_problems.clear();
    size_t denied = 0;
    for (size_t i = 0; i < m_channels.size() && i < values.size(); ++i) {
        if (m_source == Source::powercap)
            sample_powercap(i, values[i], denied);
        else
            sample_perf(i, values[i]);
    }
    if (denied > 0) {
        m_problems.item("permission: energy_uj is readable by root only (Linux >= 5.10); ")
            .add(static_cast<uint64_t>(denied))
            .add(" domains NaN");
    } else if (m_source == Source::perf && opened() < m_channels.size()) {
        m_problems.item(m_open_problems);
    }
    set_status(m_problems.view());
}

Result<std::unique_ptr<RaplBackend>> make_rapl(const std::filesystem::path &sysfs_root, const RaplIo &io)
{
    auto zones = find_powercap_domains(sysfs_root);
    if (zones)
        return std::make_unique<RaplBackend>(Source::powercap, std::move(*zones), io);
    if (zones.error().code() != Errc::not_found)
        return zones.error();
    auto events = find_perf_power_domains(sysfs_root);
    if (!events) {
        if (events.error().code() == Errc::not_found)
            return Error(Errc::not_found, "no RAPL zones in " + powercap_dir(sysfs_root).string() +
                                              " and no perf power PMU in " + power_pmu_dir(sysfs_root).string());
        return events.error();
    }
    auto backend = std::make_unique<RaplBackend>(Source::perf, std::move(*events), io);
    if (backend->opened() == 0)
        return Error(Errc::unsupported, "perf power PMU: no energy event could be opened: " + backend->open_problems());
    return backend;
}

Result<std::unique_ptr<MetricBackend>> make_rapl_backend(const NodeContext &ctx)
{
    auto b = make_rapl(ctx.sysfs_root);
    if (!b)
        return b.error();
    return std::unique_ptr<MetricBackend>(std::move(*b));
}

}  // namespace colmet::node::backends::rapl

namespace colmet::node::backends {
namespace {

// Problems opening the counters (energy_uj readable by root only) are worth
// one warning; the original's RAPL_mapping file says what each column holds.
void after_rapl_start(const MetricBackend &backend, const std::string &mapping_dir, int64_t now_ns)
{
    const auto &made = static_cast<const rapl::RaplBackend &>(backend);  // what make_rapl_backend makes
    if (!made.open_problems().empty())
        spdlog::warn("rapl: {}", made.open_problems());
    write_mapping_logged(mapping_dir, "RAPL_mapping", now_ns, rapl::rapl_mapping_csv(made.domains()));
}

}  // namespace

// This backend, for colmet-node's registry (registry.hpp).
extern const BackendFactory k_rapl_factory;
constexpr BackendFactory k_rapl_factory =
    node_backend_factory(*spec::backend_info("rapl"), &rapl::make_rapl_backend, &after_rapl_start);

}  // namespace colmet::node::backends
