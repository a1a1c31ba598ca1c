#include "collector/sinks/hdf5/JobWriter.hpp"

#include "collector/sinks/hdf5/FileAccess.hpp"
#include "collector/sinks/hdf5/Hdf5Io.hpp"
#include "collector/sinks/hdf5/SummaryStore.hpp"
#include "common/clock.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

namespace colmet::collector::hdf5 {

namespace {

// What a host or backend node costs in memory beside its name (map node,
// handles, by_position entries): an estimate for the memory budget.
constexpr size_t k_node_bytes = 256;

std::string segment_name(size_t n) { return "segment_" + std::to_string(n); }

size_t name_bytes(const std::string &s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// Can the file be opened at all? Separates "the system refused" (EACCES,
// EMFILE, ...: leave the file alone) from "HDF5 cannot read it" (corrupt).
Result<void> check_openable(const std::filesystem::path &path)
{
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return Error::system("open", path.string(), errno);
    ::close(fd);
    return ok();
}

Error foreign_file(const std::filesystem::path &path, const std::string &theirs, const std::string &writer)
{
    return Error(Errc::conflict, path.string() + " is written by the collector '" + theirs + "', not by this one ('" +
                                     writer +
                                     "'): a job has one collector; do all nodes list the same collectors "
                                     "in zeromq-uri?");
}

// The collector that writes a file, when the sink is given a name: a file
// it created names it; a file without a name (older colmet) becomes its own;
// a file with another name is left alone (Errc::conflict).
Result<void> claim(hid_t file, const std::filesystem::path &path, const std::string &writer)
{
    if (writer.empty())
        return ok();
    if (!attr_exists(file, k_writer_attr))
        return write_str_attr(file, k_writer_attr, writer);
    auto theirs = read_str_attr(file, k_writer_attr);
    if (!theirs)
        return theirs.error().with_context(path.string());
    if (*theirs != writer)
        return foreign_file(path, *theirs, writer);
    return ok();
}

// Before a file is opened for writing: opening it read-write changes its
// superblock, which another collector's file must never see. Read-only, a
// file that names another collector is an Errc::conflict; anything else
// (no name, not HDF5, unreadable) is for reopen() to judge.
Result<void> check_writer(const std::filesystem::path &path, const std::string &writer)
{
    if (writer.empty() || H5Fis_hdf5(path.c_str()) <= 0)
        return ok();
    PropList fapl = file_access_plist();
    File file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get())};
    if (!file || !attr_exists(file.get(), k_writer_attr))
        return ok();
    auto theirs = read_str_attr(file.get(), k_writer_attr);
    if (theirs && *theirs != writer)
        return foreign_file(path, *theirs, writer);
    return ok();
}

// Reopen an existing colmet file; an empty File when it is not one.
Result<File> reopen(const std::filesystem::path &path, const std::string &job_id, const std::string &writer)
{
    if (auto r = check_openable(path); !r)
        return r.error();
    if (H5Fis_hdf5(path.c_str()) <= 0)
        return File{};
    PropList fapl = file_access_plist();
    File file{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
    if (!file)
        return File{};
    auto version = read_i64_attr(file.get(), "colmet_layout_version");
    auto id = read_str_attr(file.get(), "job_id");
    if (!version || !id)
        return File{};
    if (*id != job_id)
        return Error::invalid(path.string() + " holds job '" + *id + "', not '" + job_id + "'");
    if (*version != k_layout_version)
        return Error(Errc::unsupported, path.string() + " has layout version " + std::to_string(*version));
    if (auto r = claim(file.get(), path, writer); !r) {
        close_without_writing(file);
        return r.error();
    }
    return file;
}

Result<File> create(const std::filesystem::path &path, const std::string &job_id, const std::string &writer)
{
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
        return Error::system("create directory", path.parent_path().string(), ec.value());
    PropList fapl = file_access_plist();
    // Chunk index B-tree nodes of 16 entries instead of 64: an open file
    // holds one node per dataset in memory. (This makes the superblock
    // version 1, readable by HDF5 >= 1.6.)
    PropList fcpl{H5Pcreate(H5P_FILE_CREATE)};
    H5Pset_istore_k(fcpl.get(), 8);
    // Born mode 0640, so that nobody else can open it before its ACL (if
    // any) is set; one thread creates files, so the umask is ours here.
    const mode_t old_mask = ::umask(k_job_file_umask);
    File file{H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get())};
    ::umask(old_mask);
    if (!file)
        return h5_error("create " + path.string());
    for (const auto &r : {write_i32_attr(file.get(), "colmet_layout_version", k_layout_version),
                          write_str_attr(file.get(), "job_id", job_id),
                          write_i64_attr(file.get(), "created_ns", realtime_ns()), claim(file.get(), path, writer)})
        if (!r) {
            close_without_writing(file);
            return r.error().with_context(path.string());
        }
    return file;
}

// The first open of a job's file in this JobWriter's life.
Result<File> open_first(const std::filesystem::path &path, const std::string &job_id, const std::string &writer,
                        JobWriter::Opened &out)
{
    std::error_code ec;
    auto status = std::filesystem::symlink_status(path, ec);
    const bool exists = status.type() != std::filesystem::file_type::not_found;
    if (ec && exists)
        return Error::system("stat", path.string(), ec.value());
    File file;
    if (exists && status.type() == std::filesystem::file_type::regular) {
        if (auto r = check_writer(path, writer); !r)
            return r.error();
        auto reopened = reopen(path, job_id, writer);
        if (!reopened)
            return reopened.error();
        file = std::move(*reopened);
        out.existed = file.valid();
    }
    if (exists && !file) {
        std::filesystem::path aside = path;
        aside += ".corrupt-" + std::to_string(realtime_ns());
        std::filesystem::rename(path, aside, ec);
        if (ec)
            return Error::system("rename", path.string(), ec.value());
        out.quarantined = aside;
    }
    if (!file) {
        auto created = create(path, job_id, writer);
        if (!created)
            return created.error();
        file = std::move(*created);
        out.created = true;
    }
    return file;
}

// A later open: the file must still be this job's colmet file.
Result<File> open_again(const std::filesystem::path &path, const std::string &job_id, const std::string &writer)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec)))
        return Error(Errc::not_found, path.string() + " is gone or no longer a regular file");
    auto file = reopen(path, job_id, writer);
    if (!file)
        return file.error();
    if (!*file)
        return Error::invalid(path.string() + " is no longer a readable colmet file");
    return file;
}

}  // namespace

JobWriter::JobWriter(std::filesystem::path path, std::string job_id, std::string writer, const SegmentOptions &options,
                     ChunkCodec &codec)
    : m_path(std::move(path)), m_job_id(std::move(job_id)), m_writer(std::move(writer)), m_options(options),
      m_codec(&codec)
{
    recount();
}

JobWriter::~JobWriter()
{
    if (attached())
        (void)detach();
}

Result<JobWriter::Opened> JobWriter::attach()
{
    Opened out;
    if (attached())
        return out;
    auto file = m_opened_once ? open_again(m_path, m_job_id, m_writer) : open_first(m_path, m_job_id, m_writer, out);
    if (!file)
        return file.error();
    auto hosts = open_or_create_group(file->get(), "hosts");
    if (!hosts || H5Fflush(file->get(), H5F_SCOPE_LOCAL) < 0) {
        Error e = hosts ? h5_error("flush " + m_path.string()) : hosts.error().with_context(m_path.string());
        hosts = Group{};
        close_without_writing(*file);
        return e;
    }
    m_file = std::move(*file);
    m_hosts = std::move(*hosts);
    m_opened_once = true;
    return out;
}

void JobWriter::close_groups()
{
    for (auto &[host_name, host] : m_host_nodes) {
        for (auto &[backend_name, backend] : host.backends) {
            for (auto &seg : backend.retired)
                seg.close_group();
            if (backend.current)
                backend.current->close_group();
            if (backend.last_on_disk) {  // probe again after the next attach
                backend.last_on_disk.reset();
                backend.probed = false;
            }
            backend.group.reset();
        }
        host.group.reset();
    }
    m_hosts.reset();
}

Result<void> JobWriter::detach()
{
    if (!attached())
        return ok();
    close_groups();
    if (H5Fflush(m_file.get(), H5F_SCOPE_LOCAL) < 0) {
        Error e = h5_error("flush " + m_path.string());
        close_without_writing(m_file);
        return e;
    }
    // Clean now: closing writes nothing that can fail for want of space.
    if (!m_file.reset())
        return h5_error("close " + m_path.string());
    return ok();
}

Result<void> JobWriter::sync()
{
    void *handle = nullptr;
    if (!attached() || H5Fget_vfd_handle(m_file.get(), H5P_DEFAULT, &handle) < 0 || !handle)
        return h5_error("file descriptor of " + m_path.string());
    if (::fsync(*static_cast<int *>(handle)) != 0)
        return Error::system("fsync", m_path.string(), errno);
    return ok();
}

void JobWriter::abandon()
{
    close_groups();
    close_without_writing(m_file);
    recount();
}

JobWriter::BackendNode &JobWriter::backend_node(HostNode &host, const wire::BackendBlock &block, size_t position)
{
    if (position < host.by_position.size() && host.by_position[position].first &&
        *host.by_position[position].first == block.name)
        return *host.by_position[position].second;
    if (host.by_position.size() <= position)
        host.by_position.resize(position + 1, {nullptr, nullptr});
    auto [it, inserted] = host.backends.try_emplace(block.name);
    if (inserted) {
        it->second.scope = block.scope;
        m_bytes += k_node_bytes + name_bytes(block.name);
    }
    host.by_position[position] = {&it->first, &it->second};
    return it->second;
}

size_t JobWriter::append_bound(const wire::Message &msg)
{
    size_t bytes = 2 * k_node_bytes + msg.host.size() + 1;  // a new host node
    for (const auto &block : msg.backends)
        if (!block.metrics.empty())
            bytes += k_node_bytes + block.name.size() + 1 + Segment::append_bound(block, true);
    return bytes;
}

void JobWriter::append(const wire::Message &msg)
{
    if (msg.backends.empty())
        return;
    auto [host_it, new_host] = m_host_nodes.try_emplace(msg.host);
    if (new_host)
        m_bytes += k_node_bytes + name_bytes(msg.host);
    HostNode &host = host_it->second;
    for (size_t position = 0; position < msg.backends.size(); ++position) {
        const auto &block = msg.backends[position];
        if (block.metrics.empty())
            continue;  // nothing to store (a backend that only reports a status)
        BackendNode &backend = backend_node(host, block, position);
        if (!backend.current || !backend.current->matches(block)) {
            if (backend.current) {
                if (backend.current->pending_rows() > 0)
                    backend.retired.push_back(std::move(*backend.current));
                else
                    m_bytes -= std::min(m_bytes, backend.current->memory_bytes());
            }
            backend.current.emplace(Segment::make(block, msg.time_ns));
            m_bytes += backend.current->memory_bytes();
        }
        Segment &seg = *backend.current;
        const size_t before = seg.buffer_bytes();
        seg.append(msg.time_ns, block.values);
        seg.note_status(block.status);
        m_bytes += seg.buffer_bytes() - before;
        m_max_pending = std::max(m_max_pending, seg.pending_rows());
        ++m_pending_rows;
        m_pending_bytes += sizeof(int64_t) + sizeof(double) * block.metrics.size();
    }
}

Result<hid_t> JobWriter::host_group(const std::string &hostname, HostNode &host)
{
    if (host.group)
        return host.group.get();
    bool created = false;
    auto group = open_or_create_group(m_hosts.get(), object_name(hostname), &created);
    if (!group)
        return group.error();
    if (created)
        if (auto r = write_str_attr(group->get(), "hostname", hostname); !r)
            return r.error();
    host.group = std::move(*group);
    return host.group.get();
}

Result<hid_t> JobWriter::backend_group(HostNode &host, const std::string &name, BackendNode &backend)
{
    if (backend.group)
        return backend.group.get();
    bool created = false;
    auto group = open_or_create_group(host.group.get(), object_name(name), &created);
    if (!group)
        return group.error();
    if (created)
        for (const auto &r : {write_str_attr(group->get(), "name", name),
                              write_str_attr(group->get(), "scope", wire::to_string(backend.scope)),
                              write_u64_attr(group->get(), "segments", 0)})
            if (!r)
                return r.error();
    backend.group = std::move(*group);
    return backend.group.get();
}

Result<void> JobWriter::place_on_disk(BackendNode &backend, Segment &seg, HostAggregate &aggregate,
                                      IoCounters &counters)
{
    if (seg.on_disk())
        return seg.group_open() ? ok() : seg.reopen_group(backend.group.get());
    if (!backend.probed) {
        backend.probed = true;
        while (link_exists(backend.group.get(), segment_name(backend.segments)))
            ++backend.segments;
        if (backend.segments > 0) {
            uint64_t lost = 0;
            auto last = Segment::open(backend.group.get(), segment_name(backend.segments - 1), &lost);
            if (lost > 0) {
                spdlog::warn("hdf5: {}: the last chunk of {} could not be read back (a write failed there): cut "
                             "{} rows off the segment",
                             m_path.string(), segment_name(backend.segments - 1), lost);
                aggregate.rows_dropped += lost;
                aggregate.dirty = true;
                counters.rows_dropped += lost;
            }
            if (last)
                backend.last_on_disk.emplace(std::move(*last));
            else
                spdlog::debug("hdf5: starting a new segment: {}", last.error().message());
        }
    }
    // Only the first new segment of a session may continue the last one on disk.
    std::optional<Segment> last = std::move(backend.last_on_disk);
    backend.last_on_disk.reset();
    if (last && last->metrics() == seg.metrics()) {
        seg.adopt(std::move(*last));
        return ok();
    }
    last.reset();
    const size_t n = backend.segments++;  // a failed creation does not block the name forever
    if (auto r = seg.create(backend.group.get(), segment_name(n), m_options); !r)
        return r;
    return write_u64_attr(backend.group.get(), "segments", backend.segments);
}

Result<void> JobWriter::flush_backend(HostNode &host, const std::string &name, BackendNode &backend,
                                      HostAggregate &aggregate, uint64_t &rows, IoCounters &counters)
{
    const bool pending = !backend.retired.empty() || (backend.current && backend.current->pending_rows() > 0);
    if (!pending)
        return ok();
    if (auto g = backend_group(host, name, backend); !g)
        return g.error();
    auto write = [&](Segment &seg) -> Result<void> {
        if (seg.pending_rows() == 0)
            return ok();
        if (auto r = place_on_disk(backend, seg, aggregate, counters); !r)
            return r;
        size_t dropped = 0;
        auto written = seg.flush(*m_codec, &dropped);
        if (!written) {
            rows += dropped;
            return written.error();
        }
        rows += *written;
        ++counters.write_batches;
        return ok();
    };
    while (!backend.retired.empty()) {
        auto r = write(backend.retired.front());
        if (!r)
            return r;
        backend.retired.erase(backend.retired.begin());
    }
    return backend.current ? write(*backend.current) : ok();
}

Result<void> JobWriter::flush(HostMap &hosts, IoCounters &counters)
{
    if (!attached())
        return Error(Errc::internal, "flush of a closed file");
    // Rows count as written, and host attributes as stored, once H5Fflush
    // has succeeded: after an error the file is abandoned, and what this
    // flush wrote before the error may never reach the disk.
    std::vector<std::pair<const std::string *, uint64_t>> rows;
    auto failed = [&](const Error &e) -> Result<void> {
        ++counters.write_errors;
        for (auto &[hostname, n] : rows) {
            hosts[*hostname].rows_dropped += n;
            counters.rows_dropped += n;
        }
        for (auto &[hostname, aggregate] : hosts)
            aggregate.dirty = true;  // write every attribute again into the reopened file
        recount();
        return e;
    };
    for (auto &[hostname, host] : m_host_nodes) {
        bool pending = false;
        for (auto &[name, backend] : host.backends)
            pending = pending || !backend.retired.empty() || (backend.current && backend.current->pending_rows() > 0);
        if (!pending)
            continue;
        if (auto g = host_group(hostname, host); !g)
            return failed(g.error());
        rows.emplace_back(&hostname, 0);
        for (auto &[name, backend] : host.backends)
            if (auto r = flush_backend(host, name, backend, hosts[hostname], rows.back().second, counters); !r)
                return failed(r.error());
    }
    std::vector<HostAggregate *> written;
    for (auto &[hostname, aggregate] : hosts) {
        if (!aggregate.dirty)
            continue;
        auto [it, inserted] = m_host_nodes.try_emplace(hostname);
        auto g = host_group(hostname, it->second);
        auto r = g ? write_host_attrs(*g, hostname, aggregate) : Result<void>(g.error());
        if (!r)
            return failed(r.error());
        written.push_back(&aggregate);
    }
    ++counters.flushes;
    if (H5Fflush(m_file.get(), H5F_SCOPE_LOCAL) < 0)
        return failed(h5_error("flush"));
    for (auto &[hostname, n] : rows)
        counters.rows_written += n;
    for (HostAggregate *aggregate : written) {
        aggregate->pending_meta.clear();
        aggregate->dirty = false;
    }
    m_max_pending = 0;
    m_pending_rows = 0;
    m_pending_bytes = 0;
    recount();
    return ok();
}

Result<void> JobWriter::write_flushed(const char *what, const std::function<Result<void>(hid_t)> &write)
{
    if (!attached())
        return Error(Errc::internal, std::string(what) + " of a closed file");
    if (auto r = write(m_file.get()); !r)
        return r;
    if (H5Fflush(m_file.get(), H5F_SCOPE_LOCAL) < 0)
        return h5_error("flush");
    return ok();
}

Result<void> JobWriter::write_summary(const JobSummary &summary)
{
    return write_flushed("summary", [&summary](hid_t file) { return hdf5::write_summary(file, summary); });
}

Result<void> JobWriter::write_flags(const std::vector<JobFlag> &flags)
{
    return write_flushed("flags", [&flags](hid_t file) { return hdf5::write_flags(file, flags); });
}

uint64_t JobWriter::drop_pending(HostMap &hosts)
{
    uint64_t dropped = 0;
    for (auto &[hostname, host] : m_host_nodes) {
        uint64_t here = 0;
        for (auto &[name, backend] : host.backends) {
            for (auto &seg : backend.retired)
                here += seg.drop_pending();
            backend.retired.clear();
            if (backend.current)
                here += backend.current->drop_pending();
        }
        if (here > 0) {
            auto &aggregate = hosts[hostname];
            aggregate.rows_dropped += here;
            aggregate.dirty = true;
        }
        dropped += here;
    }
    m_max_pending = 0;
    m_pending_rows = 0;
    m_pending_bytes = 0;
    recount();
    return dropped;
}

void JobWriter::recount()
{
    size_t bytes = sizeof(JobWriter) + name_bytes(m_path.native()) + name_bytes(m_job_id);
    for (const auto &[hostname, host] : m_host_nodes) {
        bytes += k_node_bytes + name_bytes(hostname) + host.by_position.capacity() * 16;
        for (const auto &[name, backend] : host.backends) {
            bytes += k_node_bytes + name_bytes(name);
            for (const auto &seg : backend.retired)
                bytes += seg.memory_bytes();
            if (backend.current)
                bytes += backend.current->memory_bytes();
            if (backend.last_on_disk)
                bytes += backend.last_on_disk->memory_bytes();
        }
    }
    m_bytes = bytes;
}

}  // namespace colmet::collector::hdf5
