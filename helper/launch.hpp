// launch.hpp: carry out a Plan. The child drops privileges and execs bwrap by
// absolute path; the parent (still root) forwards signals, waits, closes the
// PAM session and returns the jailed command's status.
#pragma once

#include <sys/types.h>

#include "identity.hpp"
#include "pam_session.hpp"
#include "plan.hpp"
#include "result.hpp"

namespace clihost {

// The tmux socket directory, made by the tenant after the drop (never by
// root: root following a tenant's symlink is how a tenant would get root to
// create or chmod files elsewhere). $HOME/.cache and $HOME/.cache/tmux must
// be real directories owned by the tenant; the latter ends up mode 0700.
Status prepare_socket_dir(const Account& tenant);

// Drop privileges, prepare, exec. Returns only on failure. expected_parent:
// who must still be our parent after the drop (read before any fork).
Error exec_jail(const Plan& plan, const Tenant& tenant, bool make_socket_dir, pid_t expected_parent);

// Block the relayed signals (and SIGCHLD) from before the PAM session opens:
// one arriving meanwhile stays pending and is relayed by run_supervised, so
// the session is always closed (not left open by a default-action death).
Status block_relayed_signals();

// With a PAM session: fork a watcher that becomes the tenant and forks and
// execs bwrap, wait in the parent (relaying signals), then close the
// session. Returns the exit status to hand to our caller.
Result<int> run_supervised(const Plan& plan, const Tenant& tenant, bool make_socket_dir, PamSession& pam);

// Signals the waiting parent relays to the jail.
inline constexpr int kForwardedSignals[] = {1 /*HUP*/, 2 /*INT*/, 3 /*QUIT*/, 15 /*TERM*/};

}  // namespace clihost
