#include "ctl/CtlMain.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char **argv)
{
    try {
        return colmet::ctl::ctl_main(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "Error: colmet-ctl: %s\n", e.what());
        return 70;
    }
}
