// rlimits.cpp: getrlimit/setrlimit over every limit, nothing else.
#include "proc/rlimits.hpp"

#include <cerrno>
#include <cstddef>

namespace clihost {

Rlimits current_rlimits() {
    Rlimits r;
    for (int i = 0; i < RLIM_NLIMITS; ++i)
        if (::getrlimit(static_cast<__rlimit_resource_t>(i), &r.lim[static_cast<std::size_t>(i)]) != 0) r.ok = false;
    return r;
}

bool apply_rlimits(const Rlimits& r) {
    if (!r.ok) return false;
    for (int i = 0; i < RLIM_NLIMITS; ++i) {
        const auto res = static_cast<__rlimit_resource_t>(i);
        rlimit want = r.lim[static_cast<std::size_t>(i)];
        if (::setrlimit(res, &want) == 0) continue;
        // Without CAP_SYS_RESOURCE (a host or container that withholds it)
        // no hard limit can be raised: lowering always works, so what is
        // set is never above `r`; what cannot be raised stays lower.
        rlimit now{};
        if (errno != EPERM || ::getrlimit(res, &now) != 0) return false;
        if (want.rlim_max > now.rlim_max) want.rlim_max = now.rlim_max;
        if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
        if (::setrlimit(res, &want) != 0) return false;
    }
    return true;
}

}  // namespace clihost
