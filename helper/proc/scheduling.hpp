// scheduling.hpp: how this process is scheduled, reset to what a process of
// the helper's own starts from. A caller chooses its front's nice value,
// scheduling policy, CPU affinity, I/O priority, timer slack and
// oom_score_adj, and a fork keeps them all: the supervisor (which serves
// every later caller) and every jail it starts would carry them, and a
// caller could stretch the time a root process holds the tenant's lock.
#pragma once

#include <string>
#include <vector>

namespace clihost {

// The defaults a process gets from a plain init: nice 0 (not PID 1's own,
// which some inits raise, and which every jail would inherit), SCHED_OTHER,
// the I/O priority that follows the nice value, the kernel's timer slack
// (50 us), oom_score_adj 0; PID 1's CPU affinity. Returns what could
// not be reset (a host that gives root no CAP_SYS_NICE, CAP_SYS_RESOURCE:
// Docker's defaults), one phrase each, for an audit warning.
std::vector<std::string> reset_scheduling();

}  // namespace clihost
