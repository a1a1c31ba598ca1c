// Who a launched program runs as, when it is not the launcher's own user.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace colmet::launch {

// Resolved in the parent (getpwnam, getgrouplist): the child only makes
// system calls.
struct Credentials {
    std::string user;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;     // the supplementary groups
    std::vector<std::string> env;  // the environment to run with ("NAME=value")
};

// In a forked child: become `c` (supplementary groups, group, user; the
// saved IDs too, so that root cannot be regained). Async-signal-safe. 0, or
// the errno of the step that failed.
int become(const Credentials &c);

}  // namespace colmet::launch
