// How colmet-node builds a backend: the one thing each backend folder
// (node/backends/<name>/) provides besides its code, as a constant named
// colmet::node::backends::k_<name>_factory. The folder's CMakeLists.txt
// declares it with colmet_add_backend(), which lists it in the generated
// built_backends.cpp; registry.hpp serves them in the catalog's order.
// Names, kinds, flags and descriptions are the catalog's
// (spec/backend_catalog.hpp); a factory names its row and a name the catalog
// lacks does not compile.
#pragma once

#include "common/result.hpp"
#include "node/JobContext.hpp"
#include "node/MetricBackend.hpp"
#include "node/NodeContext.hpp"
#include "spec/backend_catalog.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace colmet::node {

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
};

namespace detail {
consteval const spec::BackendInfo &catalog_row(std::string_view name, spec::BackendKind kind)
{
    const spec::BackendInfo *row = spec::backend_info(name);
    if (!row || row->kind != kind)
        throw "no catalog row of this name and kind (spec/backend_catalog.hpp)";  // a compile error
    return *row;
}
}  // namespace detail

consteval BackendFactory job_backend_factory(std::string_view name,
                                             Result<std::unique_ptr<MetricBackend>> (*make)(const JobContext &))
{
    const spec::BackendInfo &row = detail::catalog_row(name, spec::BackendKind::job);
    return {&row, row.name, row.description, make, nullptr, nullptr};
}

consteval BackendFactory
node_backend_factory(std::string_view name, Result<std::unique_ptr<MetricBackend>> (*make)(const NodeContext &),
                     void (*after_start)(const MetricBackend &, const std::string &, int64_t) = nullptr)
{
    const spec::BackendInfo &row = detail::catalog_row(name, spec::BackendKind::node);
    return {&row, row.name, row.description, nullptr, make, after_start};
}

}  // namespace colmet::node
