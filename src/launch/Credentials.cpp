#include "launch/Credentials.hpp"

#include <cerrno>
#include <grp.h>
#include <unistd.h>

namespace colmet::launch {

int become(const Credentials &c)
{
    if (::setgroups(c.groups.size(), c.groups.data()) != 0)
        return errno;
    if (::setresgid(c.gid, c.gid, c.gid) != 0)
        return errno;
    if (::setresuid(c.uid, c.uid, c.uid) != 0)
        return errno;
    return 0;
}

}  // namespace colmet::launch
