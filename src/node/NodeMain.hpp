#pragma once

namespace colmet::node {

// The whole of colmet-node behind main(): parse options, build the
// backends, run the sampler. Returns the process exit status.
int node_main(int argc, char **argv);

}  // namespace colmet::node
