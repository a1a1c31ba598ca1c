// The backends this colmet-node was built with, in the catalog's order
// (spec/backend_catalog.hpp): each backend folder's factory
// (BackendFactory.hpp), listed by the generated built_backends.cpp. No
// static self-registration. A catalog row without a factory is a backend
// this build left out (its dependency was missing).
#pragma once

#include "node/backends/BackendFactory.hpp"

#include <string_view>
#include <vector>

namespace colmet::node {

// Built job backends: cgroup_cpu, cgroup_memory, cgroup_io, processes.
const std::vector<BackendFactory> &job_backends();

// The built job backend of that name, or nullptr.
const BackendFactory *find_backend(std::string_view name);

// Built node-level backends: they measure the whole node, not one job's
// cgroup, and run only when their --enable-* flag is given.
const std::vector<BackendFactory> &node_backends();

// The built node-level backend of that name, or nullptr.
const BackendFactory *find_node_backend(std::string_view name);

// The built counter backend (perfhw), whose controller opens the job's
// counters; nullptr when this build has none.
const BackendFactory *counter_backend();

namespace backends {
// Every factory this build has, in no order (generated: built_backends.cpp).
const std::vector<const BackendFactory *> &built_factories();
}  // namespace backends

}  // namespace colmet::node
