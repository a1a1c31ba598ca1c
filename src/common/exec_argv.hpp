// The argv array execv() takes, made from strings (before fork: the child
// then only calls async-signal-safe functions). The strings must outlive it.
#pragma once

#include <string>
#include <vector>

namespace colmet {

inline std::vector<char *> exec_argv(const std::vector<std::string> &argv)
{
    std::vector<char *> args;
    args.reserve(argv.size() + 1);
    for (const auto &a : argv)
        args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    return args;
}

}  // namespace colmet
