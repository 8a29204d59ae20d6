// rlimits.hpp: every resource limit of this process, read and set. May call
// getrlimit/setrlimit only. The tenant's limits, read back after pam_limits
// set them on the supervisor, are set on each jail child before it drops;
// the supervisor itself returns to its baseline.
#pragma once

#include <sys/resource.h>

#include <array>

namespace clihost {

struct Rlimits {
    std::array<rlimit, RLIM_NLIMITS> lim{};
    bool ok{true};
};
Rlimits current_rlimits();
// A limit that cannot be raised (no CAP_SYS_RESOURCE) is set as high as
// the current hard limit allows: never above `r`.
bool apply_rlimits(const Rlimits& r);

}  // namespace clihost
