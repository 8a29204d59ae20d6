// jail_start.hpp: the kinds of jail, each one typed description, and the one
// function that starts any of them (docs/ARCHITECTURE.md, "Process model").
// A description is made only by its kind's factory, which checks it against
// the plan: a plan whose action or network does not fit the kind, a network
// channel an unisolated jail would get, or a namespace it did not plan to
// join, cannot produce one (the factory returns the error). What is left to
// start_jail is one linear sequence, the same for every kind.
#pragma once

#include <sys/types.h>

#include <array>
#include <optional>
#include <variant>

#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "decide/identity.hpp"
#include "decide/plan.hpp"
#include "host/cgroup.hpp"
#include "proc/rlimits.hpp"

namespace clihost {

enum class JailKind {
    session,    // the session jail (tmux server), started by the supervisor
    attach,     // an attach jail (tmux client) on a front's terminal
    one_off,    // a one-off jail (the caller's command, or check's trial) on a front's descriptors
    query,      // a list/kill client jail (no network): /dev/null and two pipes
};

// What the kind decides of the watcher and of bwrap's start (no flags in the
// plan or the call: the kind says it).
struct JailTraits {
    bool serves_tmux;     // makes the socket directory, says "ok" on ready_fd once tmux answers
    bool attaches;        // no client for a tmux that is gone (kNoServerStatus); stderr relayed escaped; status mapped
    bool reports_status;  // bwrap's --json-status-fd (kStatusFd): its own setup failure told from the command's
    bool own_session;     // bwrap in a session of its own; else a process group of its own
    bool takes_stdio;     // a front's descriptors as 0, 1, 2; a session of its own
    bool waits;           // starts before its connection: bwrap runs the stub, which is handed the command
};
constexpr JailTraits traits_of(JailKind kind) {
    switch (kind) {
        case JailKind::session: return {true, false, false, true, false, false};
        case JailKind::attach: return {false, true, false, false, true, true};
        case JailKind::one_off: return {false, false, true, false, true, true};
        case JailKind::query: return {false, false, false, false, true, false};
    }
    return {};
}

// A front's descriptors (checked by the supervisor): the jail's 0, 1, 2.
struct Stdio {
    std::array<int, 3> fd{-1, -1, -1};
};

// An isolated jail's channel to its root parent (net.hpp): the watcher's
// end, and the parent's end, which the child closes first (the parent's
// death then reads as end of file on the watcher's).
struct NetHandoff {
    int watchers_end{-1};
    int parents_end{-1};
};

// A waiting jail's channel to its supervisor (an attach jail's, a one-off
// jail's), on which its start is reported and its one connection comes (the
// command's argv and environment, the front's three descriptors): the
// watcher's end, as fd 3, and the supervisor's, which the child closes
// first.
struct ConnHandoff {
    int watchers_end{-1};
    int parents_end{-1};
};

class SessionJailStart;
class AttachJailStart;
class OneOffJailStart;
class QueryJailStart;
using JailStart = std::variant<SessionJailStart, AttachJailStart, OneOffJailStart, QueryJailStart>;

// Each kind: its plan (what bwrap gets: argv, environment, mounts), and the
// descriptors, network and report channel it needs, nothing else. Made only
// by make(); `plan` must outlive the start.
class SessionJailStart {
  public:
    static constexpr JailKind kind = JailKind::session;
    // plan.action serve; `net` exactly when the plan is isolated (its gate);
    // `ready_fd`: the watcher's report, "ok" once tmux answers (write_report).
    static Result<JailStart> make(const Plan& plan, int ready_fd, std::optional<NetHandoff> net);
    const Plan& plan;
    const int ready_fd;
    const std::optional<NetHandoff> net;

  private:
    SessionJailStart(const Plan& p, int ready, std::optional<NetHandoff> n) : plan(p), ready_fd(ready), net(n) {}
};

class AttachJailStart {
  public:
    static constexpr JailKind kind = JailKind::attach;
    // plan.action attach; started before its connection, on /dev/null
    // (`stdio`), its connection to come on `conn`; `tenant_netns` (the
    // tenant's empty network namespace, joined before the drop) exactly
    // when the plan joins it.
    static Result<JailStart> make(const Plan& plan, const Stdio& stdio, int tenant_netns, ConnHandoff conn);
    const Plan& plan;
    const Stdio stdio;
    const int tenant_netns;
    const ConnHandoff conn;

  private:
    AttachJailStart(const Plan& p, const Stdio& s, int netns, ConnHandoff c)
        : plan(p), stdio(s), tenant_netns(netns), conn(c) {}
};

class OneOffJailStart {
  public:
    static constexpr JailKind kind = JailKind::one_off;
    // plan.action command; started before its connection, on /dev/null
    // (`stdio`), the command and the caller's descriptors to come on
    // `conn`; `net` (its own network, attached before it says it is
    // ready) exactly when the plan is isolated.
    static Result<JailStart> make(const Plan& plan, const Stdio& stdio, std::optional<NetHandoff> net, ConnHandoff conn);
    const Plan& plan;
    const Stdio stdio;
    const std::optional<NetHandoff> net;
    const ConnHandoff conn;

  private:
    OneOffJailStart(const Plan& p, const Stdio& s, std::optional<NetHandoff> n, ConnHandoff c)
        : plan(p), stdio(s), net(n), conn(c) {}
};

class QueryJailStart {
  public:
    static constexpr JailKind kind = JailKind::query;
    // plan.action list_sessions or kill_session, no network at all.
    static Result<JailStart> make(const Plan& plan, const Stdio& stdio);
    const Plan& plan;
    const Stdio stdio;

  private:
    QueryJailStart(const Plan& p, const Stdio& s) : plan(p), stdio(s) {}
};

JailKind kind_of(const JailStart& start);

// What the owner gives every jail of the tenant: the tenant's limits (as
// pam_limits set them on the supervisor) and its placement (the jails leaf,
// RLIMIT_NPROC = tasks_max). Null for check's trial, outside the owner.
struct TenantContext {
    const Rlimits* limits{nullptr};
    const JailPlacement* place{nullptr};
};

// Starts any jail: forks its watcher, which (still root) takes its
// descriptors, network namespace, limits and placement, becomes the tenant
// (run_as_tenant: it dies by SIGHUP with us) and starts bwrap
// (watch_jail). Returns the watcher's pid; its exit status is the jail's.
Result<pid_t> start_jail(const JailStart& start, const TenantContext& tenant);

// A one-off jail of `plan` started before its command (start_jail of a
// OneOffJailStart on /dev/null), the owner's and check's trials alike: its
// watcher, our end of the channel its report and command come on, and for
// an isolated plan our end of its network channel (attach_user_net's).
struct WaitingOneOff {
    pid_t watcher{-1};
    UniqueFd conn;
    UniqueFd net;
};
Result<WaitingOneOff> start_oneoff_jail(const Plan& plan, const TenantContext& tenant);

// kNoServerStatus (tenant_output.hpp): the attach jail's status when its
// watcher found no tmux server and started nothing.
// A waiting jail's status when it ended before its connection came (its
// bwrap failed, or its supervisor ended it): nothing was handed to it.
inline constexpr int kNoConnectionStatus = 76;

// `check`'s trials (tenant processes outside the owner, ended before
// `check` returns): a one-off jail of `plan` started as the owner starts
// one (start_jail(OneOffJailStart); slirp4netns as `net` attached here
// when the plan is isolated, else `net` is null), handed its command on
// /dev/null, its watcher waited for here. No PAM, no cgroup. Returns its
// exit status.
Result<int> run_trial_jail(const Plan& plan, const TenantCreds* net);

}  // namespace clihost
