// plan.hpp: the pure heart. From the policy, the validated tenant, the request
// and what the host probe found, compute the exact environment and bwrap argv.
// No syscalls: `print` shows this, unit tests assert it whole, launch obeys it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "config.hpp"
#include "identity.hpp"
#include "probe.hpp"
#include "result.hpp"
#include "start_state.hpp"  // CallerEnv

namespace clihost {

inline constexpr std::string_view kSafePath = "/usr/local/bin:/usr/bin:/bin";
inline constexpr std::string_view kTmux = "/usr/bin/tmux";
inline constexpr std::string_view kDefaultShell = "/bin/sh";

struct Request {
    Verb verb{Verb::run};       // run or kill (print plans a run)
    std::string session;
    std::vector<std::string> command;  // empty: the default tmux command
};

struct Plan {
    std::string bwrap;                  // absolute path, exec'd without PATH lookup
    std::vector<std::string> argv;      // argv[0] == bwrap
    std::vector<std::string> env;       // "NAME=value", the exec environment
    std::string socket_dir;             // $HOME/.cache/tmux, made by the tenant
    std::string proc_source;            // "private" or "host" (for the audit log)
    std::vector<std::string> warnings;  // each is audit-logged at launch
    // proc = private with the host trial deferred: the jail child must prove,
    // right before exec, that a fresh procfs can be mounted, or refuse (exit 3).
    bool trial_in_child{false};
};

// extra_env values must look like a terminal type or locale: no '/', no
// spaces, no control characters (a TERM or LANG with '/' is a path
// traversal into terminfo or locale files).
bool is_well_formed_env_value(std::string_view value);

// HOME, USER, LOGNAME, SHELL, PATH; then well-formed extra_env values from the
// caller; then PAM's environment (never overriding); TTYD_SANDBOX=true last.
std::vector<std::string> build_environment(const Policy& policy, const Account& tenant, const CallerEnv& caller,
                                           const std::vector<std::string>& pam_env);

// The tmux command for run (new-session -A) or kill (kill-session) of a session.
std::vector<std::string> tmux_command(const Account& tenant, Verb verb, std::string_view session);

std::vector<std::string> build_bwrap_argv(const Policy& policy, const Account& tenant, const HostProbe& probe,
                                          const std::vector<std::string>& env, bool private_proc,
                                          const std::vector<std::string>& command);

Result<Plan> build_plan(const Policy& policy, const Tenant& tenant, const Request& request, const HostProbe& probe,
                        const CallerEnv& caller_env, const std::vector<std::string>& pam_env);

// POSIX-shell quoting for `print`: the output can be pasted into sh.
std::string shell_quote(std::string_view word);

}  // namespace clihost
