#include "node/Privileges.hpp"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <cerrno>
#include <memory>

namespace colmet::node {
namespace {

using CapState = std::unique_ptr<_cap_struct, int (*)(void *)>;

// CAP_PERFMON where the kernel knows it (5.8+), else CAP_SYS_ADMIN, which
// perf_event_open accepted alone before.
cap_value_t perf_capability()
{
#ifdef CAP_PERFMON
    if (CAP_IS_SUPPORTED(CAP_PERFMON))
        return CAP_PERFMON;
#endif
    return CAP_SYS_ADMIN;
}

}  // namespace

Result<std::vector<std::string>> drop_privileges(const PrivilegeNeeds &needs)
{
    CapState current(cap_get_proc(), cap_free);
    if (!current)
        return Error::system("cap_get_proc", "", errno);
    CapState none(cap_init(), cap_free);
    if (cap_compare(current.get(), none.get()) == 0)
        return std::vector<std::string>{};  // nothing to drop

    std::vector<cap_value_t> keep;
    if (needs.perf)
        keep.push_back(perf_capability());
    if (needs.other_proc) {
        keep.push_back(CAP_DAC_READ_SEARCH);  // the file is its owner's, mode 0400
        keep.push_back(CAP_SYS_PTRACE);       // and the kernel asks for ptrace read access
    }

    // The bounding set first: dropping from it needs CAP_SETPCAP, which the
    // next step removes.
    for (cap_value_t c = 0; CAP_IS_SUPPORTED(c); ++c) {
        bool kept = false;
        for (cap_value_t k : keep)
            kept = kept || k == c;
        if (!kept && cap_drop_bound(c) != 0 && errno != EINVAL)
            return Error::system("dropping a capability from the bounding set", std::to_string(c), errno);
    }
    CapState wanted(cap_init(), cap_free);
    if (!keep.empty() &&
        (cap_set_flag(wanted.get(), CAP_EFFECTIVE, static_cast<int>(keep.size()), keep.data(), CAP_SET) != 0 ||
         cap_set_flag(wanted.get(), CAP_PERMITTED, static_cast<int>(keep.size()), keep.data(), CAP_SET) != 0))
        return Error::system("cap_set_flag", "", errno);
    if (cap_set_proc(wanted.get()) != 0)
        return Error::system("cap_set_proc", "", errno);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return Error::system("prctl", "PR_SET_NO_NEW_PRIVS", errno);

    std::vector<std::string> names;
    for (cap_value_t k : keep) {
        char *name = cap_to_name(k);
        names.emplace_back(name != nullptr ? name : std::to_string(k));
        cap_free(name);
    }
    return names;
}

}  // namespace colmet::node
