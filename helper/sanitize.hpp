// sanitize.hpp: make the process safe before any other code runs. A setuid
// program inherits everything from an untrusted caller: fds, env, umask,
// signal dispositions, rlimits. Keep what we need, reset the rest.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "identity.hpp"
#include "plan.hpp"

namespace clihost {

struct StartState {
    Credentials creds;
    CallerEnv caller_env;                       // candidates for extra_env
    std::optional<std::string> config_override; // CLIHOST_JAIL_CONFIG, real uid 0 only
    pid_t parent{0};                            // who started us (ttyd, sudo, the proxy)
};

// Fds 0-2 made valid, everything above closed, core dumps and ptrace off,
// umask 022, signal dispositions and mask reset, parent-death signal set, the
// environment captured (bounded) and cleared. Runs before argv is parsed.
Result<StartState> sanitize_process(char** envp);

}  // namespace clihost
