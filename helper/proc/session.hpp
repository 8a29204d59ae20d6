// session.hpp: the tenant's session jail (docs/ARCHITECTURE.md, "Process
// model"): found or started by `run`, ended by `stop` (or by its last tmux
// session ending), listed by `list`. One per tenant, whatever the number of
// connections; detached from all of them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "decide/config.hpp"
#include "decide/identity.hpp"
#include "decide/plan.hpp"
#include "proc/probe.hpp"
#include "base/result.hpp"
#include "host/runtime_state.hpp"

namespace clihost {

struct SessionStart {
    const Policy& policy;
    const Tenant& tenant;
    const HostProbe& probe;
    const CallerEnv& caller_env;  // the first caller's extra_env values
    std::string ruser;            // the caller, PAM_RUSER of the session
    // Start the session jail with the supervisor (an attach), or not (a
    // one-off: the supervisor then lives while it owns a jail, and its
    // first attach starts the session jail).
    bool session_jail{true};
    // The configuration file the front read (explicit: CLIHOST_JAIL_CONFIG,
    // root's), read again by the starter under the tenant's lock.
    std::string config_path{};
    bool config_explicit{false};
};

// The tenant's live supervisor, started first if there is none: under the
// tenant's lock, a root supervisor is double-forked into a session of its
// own (stdio on /dev/null, no parent-death signal: the caller's death or
// hang-up does not reach it), opens the PAM session, starts the session
// jail if start.session_jail (returning once the tmux server accepts
// connections), and listens on its endpoint. Fails closed: no record and
// nothing running unless all of that worked.
Result<SupervisorRecord> ensure_session_jail(const SessionStart& start);

// The live session jail of `uid`, if any (read-only).
std::optional<SupervisorRecord> find_session_jail(uid_t uid);

// Whether the session jail of record `r` has ended, or ends within
// `millis`: its supervisor is gone. An attach that found no tmux server
// raced with the end of that jail (its last session ended, and the record
// was still there) when this says yes.
bool session_jail_ended(const SupervisorRecord& r, int millis);

// Whether the supervisor of `r` said its session jail's network process
// ended (RuntimeDir::network_lost).
bool session_network_lost(const SupervisorRecord& r);

// The settings the session jail of record `r` started with, if its
// supervisor recorded them (RuntimeDir::read_settings).
std::optional<JailSettings> session_jail_settings(const SupervisorRecord& r);

// Every live session jail (read-only).
std::vector<SupervisorRecord> live_session_jails();

// What `stop` ended: nothing (no supervisor ran), a supervisor with its
// session jail, or a supervisor that owned only one-off jails.
enum class Stopped { none, session_jail, supervisor_only };

// Ends the supervisor of `uid` (its session jail and every other jail) and
// waits until it is gone (SIGTERM, then SIGKILL after a grace period), then
// kills whatever is left in the tenant's jails cgroup and removes the cgroup.
Result<Stopped> stop_session_jail(uid_t uid, const Limits& limits);
// What `stop` says of it (its audit line, its output).
std::string stopped_text(Stopped what);

}  // namespace clihost
