// sanitize.hpp: make the process safe before any other code runs. A setuid
// program inherits everything from an untrusted caller: fds, env, umask,
// signal dispositions, rlimits. Keep what we need, reset the rest.
#pragma once

#include "base/result.hpp"
#include "base/start_state.hpp"

namespace clihost {

// Fds 0-2 made valid, everything above closed, core dumps and ptrace off,
// umask 022, signal dispositions and mask reset, parent-death signal set, the
// environment captured (bounded) and cleared. Runs before argv is parsed.
Result<StartState> sanitize_process(char** envp);

}  // namespace clihost
