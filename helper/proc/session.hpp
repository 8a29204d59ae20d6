// session.hpp: the tenant's supervisor and its session jail
// (docs/ARCHITECTURE.md, "Process model"), in the supervisor program: started
// for `run` (starter.hpp, the front's side), ended by `stop` (or by its last
// jail ending). One per tenant, whatever the number of connections; detached
// from all of them.
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
#include "decide/supervisor_args.hpp"
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
    // The config file this supervisor read (jail.json's drift reads it again).
    std::string config_path;
    bool config_explicit{false};
};

// clihost-jail-supervisor's two modes (verbs/supervisor_main.cpp), run
// in a clean process (clean_state) with the start-up report on fd 3; each
// returns the program's exit status.
// start: the tenant's supervisor. Out of the caller's cgroups, under the
// tenant's lock, with the file and the tenant read and validated again, a
// root supervisor in a session of its own (stdio on /dev/null) opens the
// PAM session, starts the session jail if args.session_jail (returning once
// the tmux server accepts connections), and listens on its endpoint. Fails
// closed: no record and nothing running unless all of that worked.
// `starter`: the process that forked us (its end makes init, or a
// subreaper, our parent).
int supervisor_start(const SupervisorArgs& args, pid_t starter);
// stop: ends the supervisor of args.uid (its session jail and every other
// jail; SIGTERM, then SIGKILL after a grace period) and waits until it is
// gone, then kills whatever is left in the tenant's jails cgroup and
// removes the cgroup. Returns a Stopped, or kStopFailed.
int supervisor_stop(const SupervisorArgs& args);

}  // namespace clihost
