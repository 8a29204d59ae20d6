// front.hpp: what ttyd runs, after the checks (commands.cpp): hand the
// terminal (attach) or stdio (a one-off command) and the request over to the
// tenant's supervisor through its endpoint, then relay hang-up, resize and
// the terminal's signals, and return the jail's status.
#pragma once

#include <vector>

#include "base/result.hpp"
#include "decide/request.hpp"
#include "host/runtime_state.hpp"

namespace clihost {

// What a handover came to: the jail ran and ended with `status`, or the
// supervisor's session jail was ending as the request arrived (retry: wait
// for that supervisor to end, then hand over again, once).
// refused: the supervisor refused the request and wrote its audit line
// (the front only says why on stderr: one decision line per refusal).
struct Handover {
    enum class Kind { done, retry, refused } kind{Kind::done};
    int status{0};
    Error why{Exit::ok, ""};
};

// What a front checks of its own stdin, stdout and stderr before any start
// (a refused request starts nothing: no PAM session, no network, no tmux):
// each usable as stdio (open, not a directory), and for an attach each a
// terminal.
Status check_caller_stdio(HandoverKind kind);

// Blocks the signals a front relays (and ignores TTOU/TTIN) from before a
// supervisor's start: one that arrives meanwhile stays pending and is
// relayed once the jail runs (a caller's SIGTERM during the start ends the
// jail with SIGTERM, and the front exits 143).
Status hold_front_signals();

// Verifies that the endpoint of record `rec` is its supervisor's (a socket,
// root's, in the runtime directory, not a symlink; the peer root with the
// record's pid, the record still live), sends `req` with three descriptors
// and relays until the jail has ended. An attach, and a one-off whose stdin
// is a terminal, hand over a fresh pseudo-terminal's slave, never the
// caller's terminal, and the front relays between the two (pty_relay.hpp);
// a one-off otherwise hands over fds 0, 1, 2. A refusal of the supervisor
// comes back as Kind::refused (its exit code and message).
Result<Handover> hand_over(const SupervisorRecord& rec, const HandoverRequest& req);

// list, kill: asks the supervisors of `recs` the query `req` (is_query), a
// window of them at a time (twice the CPUs, 4 to 32; a question older than
// 500 ms leaves the window), each with its own deadline of
// kTenantQueryDeadlineMs plus a margin (non-blocking sockets, one poll
// loop), each endpoint checked as hand_over checks it. One result per
// record, in order: its answer, or why there is none (no endpoint, a
// refusal with its exit code and message, no answer in time). Starts
// nothing.
std::vector<Result<QueryAnswer>> ask_supervisors(const std::vector<SupervisorRecord>& recs, const HandoverRequest& req);

}  // namespace clihost
