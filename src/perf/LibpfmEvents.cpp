// Do not include <linux/perf_event.h> here: <perfmon/pfmlib_perf_event.h>
// declares its own struct perf_event_attr.
#include "perf/LibpfmEvents.hpp"

#include "common/text.hpp"
#include "perf/SysfsPmu.hpp"

#include <perfmon/pfmlib_perf_event.h>

#include <mutex>
#include <string>

namespace colmet::perf {

namespace {

// pfm_initialize() once per process; its result is kept.
int initialize_once()
{
    static const int s_rc = pfm_initialize();
    return s_rc;
}

// libpfm4 does not document its encoding calls as thread-safe.
std::mutex s_pfm_mutex;

}  // namespace

Result<PerfEventSpec> resolve_libpfm_event(std::string_view name)
{
    std::string shown = text::printable(name);
    if (name.find('\0') != std::string_view::npos)
        return Error::invalid("perf event name '" + shown + "' holds a NUL byte");
    std::string cname(name);

    std::lock_guard lock(s_pfm_mutex);
    int rc = initialize_once();
    if (rc != PFM_SUCCESS)
        return Error(Errc::unsupported, std::string("libpfm4 initialisation failed: ") + pfm_strerror(rc));

    perf_event_attr attr{};
    pfm_perf_encode_arg_t arg{};
    arg.attr = &attr;
    arg.size = sizeof(arg);
    rc = pfm_get_os_event_encoding(cname.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
    if (rc == PFM_ERR_NOTFOUND)
        return Error(Errc::not_found, "libpfm4 does not know perf event '" + shown + "' on this machine");
    if (rc != PFM_SUCCESS)
        return Error::invalid("libpfm4 cannot encode perf event '" + shown + "': " + pfm_strerror(rc));
    if (attr.exclude_user || attr.exclude_kernel)
        return Error::invalid("perf event '" + shown +
                              "': privilege-level modifiers (:u, :k) are not supported; colmet counts user and kernel");

    PerfEventSpec spec;
    spec.name = std::move(cname);
    spec.type = attr.type;
    spec.config = attr.config;
    spec.config1 = attr.config1;
    spec.config2 = attr.config2;
    return spec;
}

}  // namespace colmet::perf
