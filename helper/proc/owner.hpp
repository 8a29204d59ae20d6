// owner.hpp: the supervisor's event loop (docs/ARCHITECTURE.md, "Process
// model"): one thread, poll over the endpoint, each connection and a
// signalfd (SIGCHLD, and HUP/INT/QUIT/TERM: stop); non-blocking everywhere
// but two bounded waits: a session jail's start (its tmux up) and an
// isolated one-off's network (slirp4netns up), each at most 10 s.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "host/cgroup.hpp"
#include "host/runtime_state.hpp"
#include "proc/rlimits.hpp"
#include "proc/net.hpp"
#include "proc/session.hpp"

namespace clihost {

// A running session jail: its watcher, and its slirp4netns (network =
// isolated; held until the jail ends).
struct SessionJail {
    pid_t watcher{-1};
    UserNet net;
    std::string about;     // for the audit line: "/proc X, network Y"
    std::string warnings;  // the plan's warnings, as audit_reason appends them
};

// What the supervisor holds for every jail it starts (all of them the
// tenant's: PAM's environment and limits, the cgroup, the network).
struct OwnerContext {
    const SessionStart& start;
    const RuntimeDir& dir;
    std::vector<std::string> pam_env;
    Rlimits limits;          // the tenant's, as pam_limits set them
    JailPlacement place;     // the jails leaf, RLIMIT_NPROC = tasks_max
    const TenantCreds* net;  // slirp4netns's credentials (network = isolated), else null
    UniqueFd attach_netns;   // the tenant's empty namespace for attach jails (net.cpp:make_empty_netns), if made
    // Starts the session jail (its tmux up) for an attach that finds none.
    std::function<Result<SessionJail>()> start_session;
    // PAM's account check for a connection of `caller` (PAM_RUSER), made
    // before its jail starts; empty without a PAM session. Its modules
    // are loaded already (the open session holds them): a fresh handle
    // costs about 0.3 ms here, against 4 to 5 ms in a front of its own.
    std::function<Status(const std::string& caller)> check_account;
    // The tenant checked again for every connection, before PAM's check
    // (validate_tenant, the account database as it is now): a front can be
    // stopped after its own checks and continued at any later time.
    std::function<Status()> check_tenant;
    // network = isolated: nftables' events (net.hpp watch_host_rules). On
    // each, the host-address rules are proven again; gone, every jail of
    // the tenant ends (its jails leaf killed), with an audit line.
    UniqueFd rules_watch;
    // For every attach, before its jail: jail.json written again with the
    // settings that differ from the config file now, and the line the
    // attach shows of them ("": none). Empty: nothing written, no line.
    std::function<std::string()> refresh_view{};
    // The jails leaf's OOM events (TenantCgroup::watch_oom), where it has a
    // memory limit: on each new OOM kill an audit line, and a notice on the
    // tenant's terminals (query.hpp notify_oom). `oom_kills`: the count so far.
    UniqueFd oom_watch;
    std::uint64_t oom_kills{0};
};

// How the loop ended, for the supervisor's last audit line.
struct OwnerEnd {
    int session_status{-1};  // the last session jail's wait status (-1: none ran)
    bool stopped{false};     // `stop` (a stop signal)
    bool session_ran{false};
    std::string last_session;  // the last jail's session name and status
    int last_status{0};
};

// Serves the tenant's connections: each request (decide/request.hpp) from
// a root peer, with its three descriptors checked and PAM's account check
// passed (check_account; an attach's pass resets the tenant's refusal
// delay), starts a connection jail
// (start_jail: AttachJailStart, OneOffJailStart) with the tenant's limits and PAM's environment;
// its status goes back to its front. An attach that finds no session jail
// starts one first. A hang-up or the front's end ends that jail (SIGHUP or
// SIGTERM, SIGKILL after 3 s). A handshake has 2 s; at most 8 are pending.
// When the session jail ends, its attach jails end with it; the loop goes
// on while any jail (a one-off) remains. With no jail left (or none within
// 5 s of a start without a session jail), or on a stop signal: the
// endpoint, record and attach namespace go, every jail is ended (SIGKILL
// after 3 s; `stop` kills the jails leaf), everything re-parented to us is
// killed and reaped, and this returns.
OwnerEnd serve_connections(OwnerContext ctx, SessionJail session, UniqueFd listener, int sigfd);

}  // namespace clihost
