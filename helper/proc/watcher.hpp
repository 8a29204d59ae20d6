// watcher.hpp: the watcher, between a root process and bwrap. Internal to
// proc/: start_jail runs it as the tenant once the jail's descriptors are
// in place.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "decide/plan.hpp"
#include "proc/jail_start.hpp"

namespace clihost {

// The tmux socket directory, made by the tenant after the drop (never by
// root: root following a tenant's symlink is how a tenant would get root to
// create or chmod files elsewhere). $HOME/.cache and $HOME/.cache/tmux must
// be real directories owned by the tenant; the latter ends up mode 0700.
Status prepare_socket_dir(const std::string& home, uid_t uid);

// What a watcher is told: its plan and kind, and the numbers its report
// pipe (the session jail's) and network channel (an isolated jail's) have
// in it (-1: none).
struct WatchOrder {
    const Plan& plan;
    JailKind kind;
    int ready_fd{-1};
    int net_fd{-1};
    int conn_fd{-1};  // an attach jail's: its connection comes here (owner.hpp: send_connection)
    // The jails leaf (placement.hpp: JailPlacement): the bwrap child enters
    // it; the watcher closes these once the child has started.
    std::vector<UniqueFd>* jails{nullptr};
};

// The watcher: the tenant, unprivileged, not dumpable, a subreaper, in a
// session of its own. Starts bwrap (start_bwrap_child), hands an isolated
// jail's namespaces over and opens its gate, waits for it (supervise), and
// returns the jail's exit status as its kind reports it.
int watch_jail(const WatchOrder& order);

}  // namespace clihost
