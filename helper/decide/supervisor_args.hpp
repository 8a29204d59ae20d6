// supervisor_args.hpp: the command line of clihost-jail-supervisor, the
// program the setuid front's starter execs (never a fork of the front's
// image). Written by the front (supervisor_argv), read back strictly by the
// supervisor (parse_supervisor_argv), which then re-reads and re-validates
// what it acts on (the config file, the tenant). Pure.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "base/start_state.hpp"

namespace clihost {

enum class SupervisorMode {
    start,  // the tenant's supervisor (a session jail's or a one-off's)
    stop,   // `stop`: ends the supervisor of `uid`, then its cgroup
};

struct SupervisorArgs {
    SupervisorMode mode{SupervisorMode::start};
    std::string tenant;  // start: the account the front validated
    uid_t uid{};
    // Who asked (the front's audit context, for the supervisor's lines):
    // the caller (a start's PAM_RUSER), its uid, how it called, the session.
    std::string caller{"-"};
    long caller_uid{-1};
    std::string via{"-"};
    std::string session{"-"};
    bool session_jail{true};    // start: start the session jail (an attach), or not (a one-off)
    // start: run by PID 1 as the main process of the tenant's service
    // (session.cpp:launch_unit); its report is on stdout, not fd 3.
    bool in_unit{false};
    std::optional<std::string> config;  // root's CLIHOST_JAIL_CONFIG; else the built-in path
    std::string config_digest;  // start: config_digest() of the file the front checked against
    CallerEnv caller_env;       // start: the first caller's extra_env candidates
    std::string faults;         // the fault-injection build's armed steps (CLIHOST_JAIL_FAULT)
};

// What `stop` ended: nothing (no supervisor ran), a supervisor with its
// session jail, or a supervisor that owned only one-off jails. The stop
// mode's exit status; kStopFailed when it reported a failure.
enum class Stopped { none, session_jail, supervisor_only };
inline constexpr int kStopFailed = 100;
// What `stop` says of it (its audit line, its output).
std::string stopped_text(Stopped what);

// argv[0] is "clihost-jail-supervisor", then "start" or "stop" and options.
std::vector<std::string> supervisor_argv(const SupervisorArgs& a);
// The strict inverse of supervisor_argv: anything else is Exit::usage.
Result<SupervisorArgs> parse_supervisor_argv(const std::vector<std::string>& argv);

}  // namespace clihost
