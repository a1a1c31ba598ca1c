#include "node/delivery/SpoolFlush.hpp"

#include "common/clock.hpp"
#include "common/log.hpp"
#include "common/names.hpp"
#include "launch/Launch.hpp"
#include "node/delivery/Delivery.hpp"
#include "node/delivery/Outbox.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace colmet::node {
namespace fs = std::filesystem;

namespace {

// The spool files of the directory, oldest first (by name is enough: one
// job's files keep their order, and every file is tried anyway).
std::vector<fs::path> spool_files(const fs::path &dir)
{
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == k_spool_suffix && it->is_regular_file(ec))
            out.push_back(it->path());
    std::sort(out.begin(), out.end());
    return out;
}

// A rewrite that a crash interrupted leaves <file>.new; its owner holds a
// lock on it while it works.
void remove_stale_rewrites(const fs::path &dir)
{
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path &p = it->path();
        if (p.extension() != ".new" || p.stem().extension() != k_spool_suffix)
            continue;
        UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (fd.valid() && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0)
            ::unlink(p.c_str());
    }
}

}  // namespace

bool spool_has_files(const fs::path &dir) { return !spool_files(dir).empty(); }

std::vector<std::string> flush_command(const fs::path &colmet_job, const fs::path &spool_dir,
                                       const std::string &log_file)
{
    std::vector<std::string> argv = {colmet_job.string(), "flush-spool", "--hook", "--spool-dir", spool_dir.string()};
    if (!log_file.empty())
        argv.insert(argv.end(), {"--log-file", log_file});
    return argv;
}

void start_background_flush(const fs::path &spool_dir, const std::string &log_file)
{
    if (spool_dir.empty() || !spool_has_files(spool_dir))
        return;
    std::error_code ec;
    const fs::path colmet_job = fs::read_symlink("/proc/self/exe", ec).parent_path() / "colmet-job";
    if (ec || ::access(colmet_job.c_str(), X_OK) != 0) {
        spdlog::warn("the node spool {} holds data, but {} is not there to flush it", spool_dir.string(),
                     colmet_job.string());
        return;
    }
    // The flush is nobody's child (init reaps it) and holds nothing of the
    // sampler's: its collector connection (which would outlive the
    // sampler), perf events, files, and a test harness's pipes that wait
    // for every holder to close.
    launch::LaunchSpec spec;
    spec.argv = flush_command(colmet_job, spool_dir, log_file);
    spec.detach = true;
    spec.session = launch::Session::own_session;
    if (auto pid = launch::launch(spec); !pid) {
        spdlog::warn("cannot start colmet-job flush-spool: {}", pid.error().message());
        return;
    }
    spdlog::info("the node spool {} holds data: flushing it in the background", spool_dir.string());
}

Result<FlushTotals> flush_spool_file(const fs::path &path, const FlushOptions &o)
{
    FlushTotals t;
    t.files = 1;
    SpoolContents contents;
    auto spool = Spool::open_existing(path, contents);
    if (!spool) {
        if (spool.error().code() == Errc::conflict) {
            t.busy = 1;
            return t;
        }
        if (spool.error().code() == Errc::parse) {
            // Nowhere to send it: keep it aside for the admin, out of the way.
            fs::path aside = path;
            aside += ".damaged";
            std::error_code ec;
            fs::rename(path, aside, ec);
            spdlog::error("{}; renamed {}", spool.error().message(), aside.string());
            t.damaged = 1;
            return t;
        }
        return spool.error();
    }
    const SpoolHeader header = (*spool)->header();
    t.messages = contents.records.size();
    t.damaged_records = contents.damaged_frames + contents.out_of_order;
    if (t.damaged_records > 0)
        spdlog::warn("job {}: {}: {} damaged records skipped ({} bytes): the messages they held count as lost in "
                     "the job's file",
                     header.job_id, path.string(), t.damaged_records, contents.damaged_bytes);
    const std::string job = header.job_id;
    auto outbox = Outbox::from_spool(std::move(*spool), contents.records,
                                     [job](const std::string &text) { spdlog::warn("job {}: {}", job, text); });
    const int64_t now = realtime_ns();
    const double max_age_ns = o.max_age_s * 1e9;
    const int64_t oldest = max_age_ns >= static_cast<double>(now) ? INT64_MIN : now - static_cast<int64_t>(max_age_ns);
    t.expired = outbox->drop_older_than(oldest);
    if (t.expired > 0)
        spdlog::warn("job {}: {}: {} messages older than {} s dropped (the collector would refuse them)", job,
                     path.string(), t.expired, o.max_age_s);
    if (outbox->empty()) {
        outbox->keep_in_spool();  // nothing left: deletes the file
        t.delivered = 1;
        return t;
    }

    ZmqOptions zmq;
    zmq.uri = header.uri;
    zmq.ack_uri = header.ack_uri;
    zmq.curve_server_key = header.curve_server_key;
    zmq.curve_secret_key = header.curve_secret_key;
    zmq.linger_ms = 0;
    auto transport = o.connect(zmq);
    if (!transport) {
        spdlog::error("job {}: {}: {}; kept", job, path.string(), transport.error().message());
        t.kept = 1;
        return t;
    }
    (*transport)->listen_for_acks(header.sender);
    Delivery delivery(**transport, *outbox, o.ack_timeout_s);
    const size_t held = outbox->size();
    delivery.wait(o.wait_s);
    t.acknowledged = outbox->stats().acknowledged;
    if (outbox->empty()) {
        spdlog::info("job {}: {} messages of {} delivered to {}; spool file removed", job, held, path.string(),
                     header.uri);
        t.delivered = 1;
        return t;
    }
    outbox->keep_in_spool();
    spdlog::warn("job {}: {} of {} messages of {} not acknowledged by {} ({}); kept for the next flush", job,
                 outbox->size(), held, path.string(), header.uri,
                 (*transport)->may_answer() ? "no answer in time" : "unreachable");
    t.kept = 1;
    return t;
}

Result<FlushTotals> flush_spool(const FlushOptions &o)
{
    FlushTotals total;
    UniqueFd dir(::open(o.spool_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) {
        if (errno == ENOENT)
            return total;  // nothing was ever spooled
        return Error::system("opening the spool directory", o.spool_dir.string(), errno);
    }
    // Only root's own directory: what is in it is sent with root's keys.
    if (auto r = prepare_spool_dir(o.spool_dir); !r)
        return r.error();
    const auto files = spool_files(o.spool_dir);
    if (::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
        spdlog::info("another flush of {} is running", o.spool_dir.string());
        total.files = total.busy = files.size();
        return total;
    }
    remove_stale_rewrites(o.spool_dir);
    for (const auto &path : files) {
        auto t = flush_spool_file(path, o);
        if (!t) {
            spdlog::error("{}", t.error().message());
            ++total.files;
            ++total.kept;
            continue;
        }
        total.files += t->files;
        total.delivered += t->delivered;
        total.kept += t->kept;
        total.busy += t->busy;
        total.damaged += t->damaged;
        total.messages += t->messages;
        total.acknowledged += t->acknowledged;
        total.expired += t->expired;
        total.damaged_records += t->damaged_records;
    }
    return total;
}

}  // namespace colmet::node
