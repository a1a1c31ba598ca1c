#include "collector/CollectorMain.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char **argv)
{
    try {
        return colmet::collector::collector_main(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "Error: colmet-collector: %s\n", e.what());
        return 70;
    }
}
