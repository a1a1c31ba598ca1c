// A stand-in for colmet-job in the plugin's tests: a shell script that
// appends its arguments (one call per line) to calls.log and then runs an
// optional extra shell line (sleep, exit 3, ...).
#pragma once

#include "FakeTree.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace colmet::spank::test {

inline std::string write_fake_helper(const colmet::test::FakeTree &t, const std::string &extra = "")
{
    std::string log = t.path("calls.log").string();
    t.write("colmet-job", "#!/bin/sh\necho \"$*\" >> '" + log + "'\n" + extra + "\n");
    ::chmod(t.path("colmet-job").c_str(), 0755);
    return t.path("colmet-job").string();
}

inline std::vector<std::string> fake_calls(const colmet::test::FakeTree &t)
{
    std::ifstream in(t.path("calls.log"));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

}  // namespace colmet::spank::test
