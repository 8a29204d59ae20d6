// front.hpp: what ttyd runs, after the checks (commands.cpp): hand the
// terminal (attach) or stdio (a one-off command) and the request over to the
// tenant's supervisor through its endpoint, then relay hang-up, resize and
// the terminal's signals, and return the jail's status.
#pragma once

#include "base/result.hpp"
#include "decide/request.hpp"
#include "host/runtime_state.hpp"

namespace clihost {

// What a handover came to: the jail ran and ended with `status`, or the
// supervisor's session jail was ending as the request arrived (retry: wait
// for that supervisor to end, then start a new one, once).
struct Handover {
    enum class Kind { done, retry } kind{Kind::done};
    int status{0};
};

// Verifies that the endpoint of record `rec` is its supervisor's (a socket,
// root's, in the runtime directory, not a symlink; the peer root with the
// record's pid, the record still live), sends `req` with fds 0, 1, 2, and
// relays until the jail has ended. A refusal of the supervisor comes back
// as its error (its exit code and message).
Result<Handover> hand_over(const SupervisorRecord& rec, const HandoverRequest& req);

}  // namespace clihost
