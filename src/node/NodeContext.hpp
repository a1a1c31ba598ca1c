// What the node-level backends (scope "node": RAPL, temperatures,
// InfiniBand, Lustre) need to know: where sysfs and procfs are mounted.
// Its own header, so that a backend's header does not include the registry
// that lists it.
#pragma once

#include <filesystem>

namespace colmet::node {

struct NodeContext {
    std::filesystem::path sysfs_root = "/sys";
    std::filesystem::path proc_root = "/proc";
};

}  // namespace colmet::node
