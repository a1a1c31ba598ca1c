#include "collector/sinks/hdf5/JobFile.hpp"

#include "collector/sinks/hdf5/Hdf5Io.hpp"
#include "common/clock.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace colmet::collector::hdf5 {

namespace {

std::string segment_name(size_t n) { return "segment_" + std::to_string(n); }

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

// Reopen an existing colmet file; an empty File when it is not one.
Result<File> reopen(const std::filesystem::path &path, const std::string &job_id)
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
    return file;
}

Result<File> create(const std::filesystem::path &path, const std::string &job_id)
{
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
        return Error::system("create directory", path.parent_path().string(), ec.value());
    PropList fapl = file_access_plist();
    // Chunk index B-tree nodes of 16 entries instead of 64: an open file
    // holds one node per dataset in memory, ~500 KiB per open file instead of
    // ~780 KiB. (This makes the superblock version 1, readable by HDF5 >= 1.6.)
    PropList fcpl{H5Pcreate(H5P_FILE_CREATE)};
    H5Pset_istore_k(fcpl.get(), 8);
    File file{H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get())};
    if (!file)
        return h5_error("create " + path.string());
    for (auto r : {write_i32_attr(file.get(), "colmet_layout_version", k_layout_version),
                   write_str_attr(file.get(), "job_id", job_id),
                   write_i64_attr(file.get(), "created_ns", realtime_ns())})
        if (!r)
            return r.error().with_context(path.string());
    return file;
}

} // namespace

JobFile::JobFile(File file, Group hosts, SegmentOptions options, ChunkCodec &codec)
    : m_file(std::move(file)), m_hosts(std::move(hosts)), m_options(options), m_codec(&codec)
{
}

Result<JobFile::Opened> JobFile::open(const std::filesystem::path &path, const std::string &job_id,
                                      const SegmentOptions &options, ChunkCodec &codec)
{
    Opened out;
    std::error_code ec;
    auto status = std::filesystem::symlink_status(path, ec);
    const bool exists = status.type() != std::filesystem::file_type::not_found;
    if (ec && exists)
        return Error::system("stat", path.string(), ec.value());
    File file;
    if (exists && status.type() == std::filesystem::file_type::regular) {
        auto reopened = reopen(path, job_id);
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
        auto created = create(path, job_id);
        if (!created)
            return created.error();
        file = std::move(*created);
    }
    auto hosts = open_or_create_group(file.get(), "hosts");
    if (!hosts)
        return hosts.error().with_context(path.string());
    if (H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0)
        return h5_error("flush " + path.string());
    out.file = std::unique_ptr<JobFile>(new JobFile(std::move(file), std::move(*hosts), options, codec));
    return out;
}

Result<JobFile::HostNode *> JobFile::host_node(const std::string &hostname)
{
    if (auto it = m_host_nodes.find(hostname); it != m_host_nodes.end())
        return &it->second;
    bool created = false;
    auto group = open_or_create_group(m_hosts.get(), object_name(hostname), &created);
    if (!group)
        return group.error();
    if (created) {
        m_structure_changed = true;
        if (auto r = write_str_attr(group->get(), "hostname", hostname); !r)
            return r.error();
    }
    auto [it, inserted] = m_host_nodes.emplace(hostname, HostNode{std::move(*group), {}, {}});
    return &it->second;
}

Result<JobFile::BackendNode *> JobFile::backend_node(HostNode &host, const wire::BackendBlock &block,
                                                    size_t position)
{
    if (position < host.by_position.size() && host.by_position[position].first &&
        *host.by_position[position].first == block.name)
        return host.by_position[position].second;
    if (host.by_position.size() <= position)
        host.by_position.resize(position + 1, {nullptr, nullptr});
    if (auto it = host.backends.find(block.name); it != host.backends.end()) {
        host.by_position[position] = {&it->first, &it->second};
        return &it->second;
    }
    bool created = false;
    auto group = open_or_create_group(host.group.get(), object_name(block.name), &created);
    if (!group)
        return group.error();
    if (created) {
        m_structure_changed = true;
        for (auto r : {write_str_attr(group->get(), "name", block.name),
                       write_str_attr(group->get(), "scope", wire::to_string(block.scope)),
                       write_u64_attr(group->get(), "segments", 0)})
            if (!r)
                return r.error();
    }
    BackendNode node;
    node.group = std::move(*group);
    auto [it, inserted] = host.backends.emplace(block.name, std::move(node));
    host.by_position[position] = {&it->first, &it->second};
    return &it->second;
}

Result<Segment *> JobFile::segment_for(BackendNode &backend, const wire::BackendBlock &block, int64_t time_ns)
{
    if (!backend.probed) {
        backend.probed = true;
        while (link_exists(backend.group.get(), segment_name(backend.segments)))
            ++backend.segments;
        if (backend.segments > 0) {
            auto last = Segment::open(backend.group.get(), segment_name(backend.segments - 1));
            if (last)
                backend.current.emplace(std::move(*last));
            else
                spdlog::debug("hdf5: starting a new segment: {}", last.error().message());
        }
    }
    if (backend.current && backend.current->matches(block))
        return &*backend.current;
    m_structure_changed = true;
    const size_t n = backend.segments++;  // a failed creation does not block the name forever
    auto seg = Segment::create(backend.group.get(), segment_name(n), block.metrics, time_ns, m_options);
    if (!seg)
        return seg.error();
    if (backend.current && backend.current->pending_rows() > 0)
        m_retired.push_back(std::move(*backend.current));
    backend.current.emplace(std::move(*seg));
    if (auto r = write_u64_attr(backend.group.get(), "segments", backend.segments); !r)
        return r.error();
    return &*backend.current;
}

Result<void> JobFile::flush_structure()
{
    if (!m_structure_changed)
        return ok();
    m_structure_changed = false;
    if (H5Fflush(m_file.get(), H5F_SCOPE_LOCAL) < 0)
        return h5_error("flush");
    return ok();
}

Result<void> JobFile::append(const wire::Message &msg)
{
    if (msg.backends.empty())
        return ok();
    auto host = host_node(msg.host);
    if (!host)
        return host.error();
    std::optional<Error> first_error;
    for (size_t position = 0; position < msg.backends.size(); ++position) {
        const auto &block = msg.backends[position];
        if (block.metrics.empty())
            continue;  // nothing to store (a backend that only reports a status)
        auto backend = backend_node(**host, block, position);
        auto seg = backend ? segment_for(**backend, block, msg.time_ns) : Result<Segment *>(backend.error());
        if (seg) {
            (*seg)->append(msg.time_ns, block.values);
            (*seg)->note_status(block.status);
            m_max_pending = std::max(m_max_pending, (*seg)->pending_rows());
        } else if (!first_error)
            first_error = seg.error();
    }
    auto flushed = flush_structure();
    if (first_error)
        return *first_error;
    return flushed;
}

Result<void> JobFile::flush(HostMap &hosts, IoCounters &counters)
{
    std::optional<Error> first_error;
    auto note = [&](const Error &e) {
        ++counters.write_errors;
        if (!first_error)
            first_error = e;
    };
    auto write = [&](Segment &seg) {
        if (seg.pending_rows() == 0)
            return;
        size_t dropped = 0;
        auto rows = seg.flush(*m_codec, &dropped);
        if (rows) {
            counters.rows_written += *rows;
            ++counters.write_batches;
        } else {
            counters.rows_dropped += dropped;
            note(rows.error());
        }
    };
    for (auto &seg : m_retired)
        write(seg);
    m_retired.clear();
    m_max_pending = 0;  // every buffer below is written or dropped
    for (auto &[host_name, host] : m_host_nodes)
        for (auto &[backend_name, backend] : host.backends)
            if (backend.current)
                write(*backend.current);
    for (auto &[hostname, aggregate] : hosts) {
        if (!aggregate.dirty)
            continue;
        auto node = host_node(hostname);
        auto r = node ? write_host_attrs((*node)->group.get(), hostname, aggregate) : Result<void>(node.error());
        if (!r)
            note(r.error());
    }
    m_structure_changed = false;
    ++counters.flushes;
    if (H5Fflush(m_file.get(), H5F_SCOPE_LOCAL) < 0)
        note(h5_error("flush"));
    if (first_error)
        return *first_error;
    return ok();
}

Result<void> JobFile::write_summary(const JobSummary &summary)
{
    if (auto r = hdf5::write_summary(m_file.get(), summary); !r)
        return r;
    if (H5Fflush(m_file.get(), H5F_SCOPE_LOCAL) < 0)
        return h5_error("flush");
    return ok();
}

Result<void> JobFile::close()
{
    m_retired.clear();
    m_host_nodes.clear();
    m_hosts.reset();
    if (!m_file.reset())
        return h5_error("close");
    return ok();
}

} // namespace colmet::collector::hdf5
