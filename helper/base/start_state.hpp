// start_state.hpp: what sanitize_process captured of the caller before it
// reset the process: credentials, the candidate extra_env values, the
// override of the policy path, the parent. Plain data with no project
// dependencies, so sanitize (the first code to run) needs nothing above it.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace clihost {

// Process credentials, read once at start.
struct Credentials {
    uid_t ruid{}, euid{}, suid{};
    gid_t rgid{};
    std::vector<gid_t> groups;          // getgroups() of the process
    std::optional<std::string> sudo_uid; // SUDO_UID, captured before the env is cleared
};

// The caller's values of the extra_env names, captured before clearenv().
using CallerEnv = std::map<std::string, std::string>;

struct StartState {
    Credentials creds;
    CallerEnv caller_env;                       // candidates for extra_env
    std::optional<std::string> config_override; // CLIHOST_JAIL_CONFIG, real uid 0 only
    pid_t parent{0};                            // who started us (ttyd, sudo, the proxy)
};

}  // namespace clihost
