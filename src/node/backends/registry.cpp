#include "node/backends/registry.hpp"

namespace colmet::node {
namespace {

std::vector<BackendFactory> built_of_kind(spec::BackendKind kind)
{
    std::vector<BackendFactory> out;
    for (const auto &row : spec::k_backend_catalog)
        if (row.kind == kind)
            for (const BackendFactory *f : backends::built_factories())
                if (f->info == &row)
                    out.push_back(*f);
    return out;
}

const BackendFactory *find_in(const std::vector<BackendFactory> &table, std::string_view name)
{
    for (const auto &f : table)
        if (f.name == name)
            return &f;
    return nullptr;
}

}  // namespace

const std::vector<BackendFactory> &job_backends()
{
    static const std::vector<BackendFactory> k_table = built_of_kind(spec::BackendKind::job);
    return k_table;
}

const BackendFactory *find_backend(std::string_view name) { return find_in(job_backends(), name); }

const std::vector<BackendFactory> &node_backends()
{
    static const std::vector<BackendFactory> k_table = built_of_kind(spec::BackendKind::node);
    return k_table;
}

const BackendFactory *find_node_backend(std::string_view name) { return find_in(node_backends(), name); }

const BackendFactory *counter_backend()
{
    static const std::vector<BackendFactory> k_table = built_of_kind(spec::BackendKind::perfhw);
    return k_table.empty() ? nullptr : &k_table.front();
}

}  // namespace colmet::node
