// starter.hpp: the front's side of the tenant's supervisor. The supervisor
// is a program of its own (clihost-jail-supervisor, CMake
// CLIHOST_JAIL_SUPERVISOR), exec'd by the front's starter, never a fork of
// the setuid image: a child of the front made root through and through
// with nothing of the caller's (clean_state), in a session of its own,
// execs it by its absolute path with an empty environment and only the
// start-up report (fd 3). `start` is double-forked (init's child, or a
// subreaper's); `stop` is waited for. The records are read here (read-only).
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "base/result.hpp"
#include "decide/supervisor_args.hpp"
#include "host/runtime_state.hpp"

namespace clihost {

// The supervisor program, as installed.
inline constexpr const char* kSupervisorPath = CLIHOST_JAIL_SUPERVISOR_PATH;

// The tenant's live supervisor (args.uid), started first if there is none
// (the supervisor program's start mode: it reads the file and the account
// again, takes the tenant's lock, opens the PAM session, starts the session
// jail if args.session_jail, and listens on its endpoint). Fails closed: no
// record and nothing running unless all of that worked.
Result<SupervisorRecord> ensure_session_jail(const SupervisorArgs& args);

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

// `stop` (the supervisor program's stop mode, waited for): ends the
// supervisor of args.uid (its session jail and every other jail; SIGTERM,
// then SIGKILL after a grace period), whatever build started it, then
// kills whatever is left in the tenant's jails cgroup and removes it.
Result<Stopped> stop_session_jail(const SupervisorArgs& args);

}  // namespace clihost
