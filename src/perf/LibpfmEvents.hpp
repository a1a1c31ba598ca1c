// Event names of libpfm4 ("INST_RETIRED:ANY_P", "perf::TASK-CLOCK"), encoded
// for perf_event_open(2) by pfm_get_os_event_encoding(). Compiled only when
// COLMET_HAVE_LIBPFM is defined. libpfm4 reads the host's /sys itself: it
// knows a hardware PMU's events only when it detects that PMU on this machine.
#pragma once

#include "common/result.hpp"
#include "perf/PerfEventSpec.hpp"

#include <string_view>

namespace colmet::perf {

// Errc::not_found when libpfm4 does not know the name (the caller then
// reports the generic "unknown perf event"); Errc::invalid when it knows the
// event but rejects the rest (a bad umask or modifier); Errc::unsupported
// when pfm_initialize() failed. Counts user and kernel mode (PFM_PLM3 |
// PFM_PLM0), like the 28 colmet names; ":u"/":k" modifiers are refused
// because PerfEventSpec cannot carry exclude_user/exclude_kernel.
Result<PerfEventSpec> resolve_libpfm_event(std::string_view name);

}  // namespace colmet::perf
