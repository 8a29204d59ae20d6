// oom_preload.cpp: clihost-jail-oom.so, preloaded into the session jail's
// tmux server only (plan.cpp, --setenv LD_PRELOAD), as the tenant.
//
// Why: when a tenant's jails reach memory_max the kernel's OOM killer picks,
// among the jails' processes, the one with the highest oom_score_adj, then
// the largest. The session jail's bwrap, its tmux server and every attach
// jail run at 0 (the default); each process the tmux server forks (a pane's
// shell, run-shell, if-shell, #(), pipe-pane, a popup: whatever the tenant's
// configuration makes it fork) raises itself to 1000 in the child, before it
// execs anything of the tenant's. So the OOM killer takes the tenant's work
// first, and never the server while any of it is left (SECURITY.md, "The
// session outlives its memory exhaustion"). Raising needs no privilege; no
// process of the tenant's is ever below 0, so none gains anything against
// the host's OOM killer. A tenant may lower its own processes back to 0
// (never below): that only makes its own tmux server a candidate again.
//
// Loaded by ld.so before tmux's main: the constructor takes LD_PRELOAD out of
// the environment (tmux copies it into its global environment, which every
// pane inherits) and registers the fork handler. A child that cannot raise
// itself ends at once (status 127): it never runs at the server's score.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

namespace {

void raise_in_child() noexcept {
    const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && ::write(fd, "1000", 4) == 4;
    if (fd >= 0) ::close(fd);
    if (!ok) ::_exit(127);
}

__attribute__((constructor)) void clihost_oom_preload_init() {
    (void)::unsetenv("LD_PRELOAD");
    // No handler registered: the server's children would run at its score.
    // Ending the server then is the closed failure (the jail does not start).
    if (::pthread_atfork(nullptr, nullptr, raise_in_child) != 0) ::_exit(127);
}

}  // namespace
