#include "job/JobMain.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char **argv)
{
    try {
        return colmet::job::job_main(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "Error: colmet-job: %s\n", e.what());
        return 70;
    }
}
