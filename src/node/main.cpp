#include "node/NodeMain.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char **argv)
{
    try {
        return colmet::node::node_main(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "Error: colmet-node: %s\n", e.what());
        return 70;
    }
}
