// How colmet-node builds a backend: the one thing each backend folder
// (node/backends/<name>/) provides besides its code, as a constant named
// colmet::node::backends::k_<name>_factory, a constexpr constant (declared
// extern first, so that it has a symbol). The folder's CMakeLists.txt
// declares it with colmet_add_backend(), which lists it in the generated
// built_backends.cpp; registry.hpp serves them in the catalog's order.
// Names, kinds, flags and descriptions are the catalog's
// (spec/backend_catalog.hpp); a factory names its row, and a name the catalog
// lacks does not compile.
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "node/control/PerfhwController.hpp"
#include "spec/backend_catalog.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace colmet::node {

// What a counter backend's controller needs besides the job.
struct CounterSettings {
    std::filesystem::path cgroup_root = "/sys/fs/cgroup";
    std::filesystem::path sysfs_root = "/sys";
    std::filesystem::path mapping_dir;  // write a mapping file per set of events (empty: none)
};

struct BackendFactory {
    const spec::BackendInfo *info = nullptr;  // the catalog's row
    std::string_view name;                    // info->name (as on the wire)
    std::string_view description;             // info->description

    // Job backends (spec::BackendKind::job): built for one job's cgroups,
    // or says why they cannot work for it.
    Result<std::unique_ptr<MetricBackend>> (*make_for_job)(const JobContext &) = nullptr;
    // Node backends (spec::BackendKind::node): built once for the node, or
    // says why this node cannot have it (Errc::not_found when the device or
    // file system is absent).
    Result<std::unique_ptr<MetricBackend>> (*make_for_node)(const NodeContext &) = nullptr;
    // Node backends, optional: run once the backend is built, with the
    // directory given for its mapping file (empty: none) and the time to
    // name it by; logs what the admin should know (problems, the file written).
    void (*after_start)(const MetricBackend &, const std::string &mapping_dir, int64_t now_ns) = nullptr;
    // Counter backends (spec::BackendKind::perfhw): the controller that
    // opens the job's counters on the events asked for, at start and at
    // colmet-ctl's request, and moves them with the job's cgroups.
    std::unique_ptr<control::PerfhwController> (*make_controller)(const JobContext &,
                                                                  const CounterSettings &) = nullptr;
};

// The factory of a catalog row, for a constexpr constant: the row is named
// by the caller, as *spec::backend_info("<name>") (a name the catalog lacks
// dereferences null: it does not compile), and a row of another kind does
// not compile either. (The row is looked up by the caller, not here: GCC's
// -fsanitize=null and nonnull-attribute make a lookup by a consteval
// function's string_view parameter a non-constant expression.)
consteval BackendFactory job_backend_factory(const spec::BackendInfo &row,
                                             Result<std::unique_ptr<MetricBackend>> (*make)(const JobContext &))
{
    if (row.kind != spec::BackendKind::job)
        throw "not a job backend's row (spec/backend_catalog.hpp)";  // a compile error
    return {&row, row.name, row.description, make, nullptr, nullptr, nullptr};
}

consteval BackendFactory
node_backend_factory(const spec::BackendInfo &row, Result<std::unique_ptr<MetricBackend>> (*make)(const NodeContext &),
                     void (*after_start)(const MetricBackend &, const std::string &, int64_t) = nullptr)
{
    if (row.kind != spec::BackendKind::node)
        throw "not a node backend's row (spec/backend_catalog.hpp)";  // a compile error
    return {&row, row.name, row.description, nullptr, make, after_start, nullptr};
}

consteval BackendFactory counter_backend_factory(
    const spec::BackendInfo &row,
    std::unique_ptr<control::PerfhwController> (*make_controller)(const JobContext &, const CounterSettings &))
{
    if (row.kind != spec::BackendKind::perfhw)
        throw "not a counter backend's row (spec/backend_catalog.hpp)";  // a compile error
    return {&row, row.name, row.description, nullptr, nullptr, nullptr, make_controller};
}

}  // namespace colmet::node
