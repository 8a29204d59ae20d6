// launch.hpp: carry out a Plan. Every process that runs a jail becomes the
// tenant through run_as_tenant (privdrop.hpp) and execs bwrap by absolute
// path; the root process that waits on them (the tenant's supervisor, and
// `check` for its network trial) relays signals, reaps, and never waits forever.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "decide/identity.hpp"
#include "host/cgroup.hpp"
#include "priv/pam_session.hpp"
#include "decide/plan.hpp"
#include "priv/privdrop.hpp"
#include "base/result.hpp"

namespace clihost {

// Every resource limit of this process (getrlimit), and setting them all
// (setrlimit): the tenant's limits, read back after pam_limits set them on
// the supervisor, are set on each jail child before it drops.
struct Rlimits {
    std::array<rlimit, RLIM_NLIMITS> lim{};
    bool ok{true};
};
// A limit that cannot be raised (no CAP_SYS_RESOURCE) is set as high as
// the current hard limit allows: never above `r`.
Rlimits current_rlimits();
bool apply_rlimits(const Rlimits& r);


// The tmux socket directory, made by the tenant after the drop (never by
// root: root following a tenant's symlink is how a tenant would get root to
// create or chmod files elsewhere). $HOME/.cache and $HOME/.cache/tmux must
// be real directories owned by the tenant; the latter ends up mode 0700.
Status prepare_socket_dir(const std::string& home, uid_t uid);

// This process becomes the tenant and execs the jail (`check`'s jail trial).
// It dies with `expected_parent` (the caller, read before any fork). Never
// returns: a failure is logged and exits.
[[noreturn]] void exec_jail(const Plan& plan, pid_t expected_parent) noexcept;

// The attach jail's status when its watcher found no tmux server on the
// tenant's socket and started nothing (the session jail is ending): an exit
// status no tmux client returns (it exits 0 or 1).
inline constexpr int kNoServerStatus = 75;

// Block the relayed signals (and SIGCHLD) from before the PAM session opens:
// one arriving meanwhile stays pending and is relayed by the waiting parent,
// so the session is always closed (not left open by a default-action death).
Status block_relayed_signals();
sigset_t relayed_signals();
// WINCH, TSTP, CONT: what a front relays through its supervisor; a
// connection jail's watcher sends them to the jail's process group. Blocked
// by the supervisor (its children inherit the mask).
sigset_t group_signals();

// Everything below needs nothing but the plan: who to become, what to
// exec, with which environment, and which socket directory to make.

// `check`'s network trial (a tenant process outside the owner, ended before
// `check` returns): an isolated one-off jail of `plan` with slirp4netns as
// `net`, its watcher forked and waited for here. No PAM, no cgroup: /bin/true
// and gone. Returns its exit status.
Result<int> run_network_trial(const Plan& plan, const TenantCreds& net);

// The session jail's watcher, forked by its supervisor: the tenant makes
// the tmux socket directory, starts bwrap (in a session of its own) and
// writes one line to `ready_fd` once the tmux server accepts connections
// ("ok") or it failed ("fail CODE MESSAGE"). Returns the watcher's pid.
// An isolated jail's watcher hands its namespaces over on `net_fd`
// (attach_user_net, net.hpp), and closes `parents_end`, the caller's end of
// that channel; both -1 otherwise.
Result<pid_t> spawn_session_watcher(const Plan& plan, int ready_fd, int net_fd, int parents_end,
                                    const Rlimits& limits, const JailPlacement* place);

// A connection's jail (an attach jail, a one-off jail), started by the
// tenant's supervisor as its child: `stdio` (the descriptors a front handed
// over) become the jail's 0, 1, 2; the child takes a session of its own,
// joins `join_netns` (plan.net == JailNet::tenant_empty; else -1), takes
// `limits` (the tenant's), closes every other descriptor but `net_fd` (an
// isolated one-off's channel to the supervisor, net.hpp; else -1), and
// becomes the jail's watcher (the tenant), which relays WINCH/TSTP/CONT/INT/
// QUIT to the jail's process group and ends the jail on HUP/TERM. Its exit
// status is the jail's. Returns its pid.
// `place`, as for a session watcher: the jails leaf and RLIMIT_NPROC.
Result<pid_t> spawn_connection_jail(const Plan& plan, const int stdio[3], int join_netns, int net_fd,
                                    const Rlimits& limits, const JailPlacement* place);

// Waits for `child` with relayed_signals() blocked: relays each signal to
// it, reaps everything re-parented to us, and SIGKILLs what is left once the
// child is gone or a relayed signal was not obeyed within a grace period
// (a stopped or wedged tenant process must not keep a root process waiting).
// Returns the child's wait status (-1 if it was never reaped).
int supervise(pid_t child);

// A wait status as an exit status: 128 + the signal, as a shell reports it.
int exit_status_of(int status);

// Start-up reports between the session jail's processes: one line, "ok" or
// "fail CODE MESSAGE". read_report waits at most `seconds`; a pipe closed
// without a line is a failure.
void write_report(int fd, const Status& st);
Status read_report(int fd, int seconds);

// `check`'s jail trial (a tenant process outside the owner, ended before
// `check` returns): a one-off jail of `plan` (network none or host) exec'd
// by a child of ours, its stdio on /dev/null, waited for. Returns its exit
// status (-1: it could not start).
int trial_jail_status(const Plan& plan);

// Runs argv as the tenant (or as `creds` for check without a tenant) after
// the full drop; returns the first line of its stdout ("" on failure).
std::string dropped_output(const TenantCreds& creds, const std::vector<std::string>& argv);

// SIGKILL to every process still this one's child (remnants of a jail
// re-parented to a subreaper: bwrap's pid 1 before --die-with-parent, say).
void kill_remaining_children();

}  // namespace clihost
