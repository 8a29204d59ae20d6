// supervise.hpp: the waiting parent. A root process that waits on a tenant's
// (the supervisor on its jails' watchers, `check` on its trial) and each
// watcher (on its bwrap) relays signals, reaps, and never waits forever.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

#include "base/result.hpp"

namespace clihost {

// Block the relayed signals (and SIGCHLD) from before the PAM session opens:
// one arriving meanwhile stays pending and is relayed by the waiting parent,
// so the session is always closed (not left open by a default-action death).
Status block_relayed_signals();
sigset_t relayed_signals();
// WINCH, TSTP, CONT: what a front relays through its supervisor; a
// connection jail's watcher sends them to the jail's process group. Blocked
// by the supervisor (its children inherit the mask).
sigset_t group_signals();

// Waits for `child` with relayed_signals() blocked: relays each signal to
// it, reaps everything re-parented to us, and SIGKILLs what is left once the
// child is gone or a relayed signal was not obeyed within a grace period
// (a stopped or wedged tenant process must not keep a root process waiting).
// Returns the child's wait status (-1 if it was never reaped).
int supervise(pid_t child);

// A wait status as an exit status: 128 + the signal, as a shell reports it.
int exit_status_of(int status);

// SIGKILL to every process still this one's child (remnants of a jail
// re-parented to a subreaper: bwrap's pid 1 before --die-with-parent, say).
void kill_remaining_children();

// Start-up reports between the session jail's processes: one line, "ok" or
// "fail CODE MESSAGE". read_report waits at most `seconds`; a pipe closed
// without a line is a failure.
void write_report(int fd, const Status& st);
Status read_report(int fd, int seconds, const std::string& what = "the session jail", const char* verb = "start");

// Reads fd until `stop` has been read, `max` bytes, end of file, or `seconds`
// have passed (then timed_out): a start-up report, bwrap's --info-fd JSON.
struct ReadUntil {
    std::string text;
    bool timed_out{false};
};
ReadUntil read_until(int fd, char stop, std::size_t max, int seconds);

}  // namespace clihost
