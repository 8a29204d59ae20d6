// clean_state.hpp: a root process with nothing of the caller's, made by
// the front's starter before it execs the supervisor program, and again by
// that program itself (it trusts nothing it inherits).
#pragma once

#include "base/result.hpp"
#include "proc/rlimits.hpp"

namespace clihost {

// The supervisor's own limits: root's own, PID 1's (never the caller's,
// never the tenant's), with no core dump (it holds PAM's data).
Rlimits baseline_rlimits();

// Root through and through (real, effective, saved ids 0, no supplementary
// groups), not dumpable, in /, umask 022, stdio on /dev/null, no parent-death
// signal, every descriptor closed but `keep_fd`, moved to 3 (the start-up
// report), no environment, every signal's default disposition (SIGPIPE and
// SIGXFSZ ignored) and an empty mask, PID 1's limits and scheduling, a
// fresh session keyring.
Status clean_state(int keep_fd);

}  // namespace clihost
