// query.hpp: a query of a tenant's tmux (list, kill), asked of the
// tenant's supervisor (decide/request.hpp) and answered by a tmux client
// in a jail of the supervisor's: its waiting attach jail's (the stub runs
// it), or else a query jail that the supervisor starts as its own child,
// as any connection jail (jail_start.cpp:start_jail: the jails leaf, the
// tenant's limits and PAM's environment, no network). Its stdout and
// stderr come back on pipes, read without blocking the supervisor's loop,
// bounded, within kTenantQueryDeadlineMs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "decide/request.hpp"
#include "proc/owner.hpp"

namespace clihost {

// What a query jail wrote and how it ended, as far as it got.
struct RunningQuery {
    HandoverKind kind{HandoverKind::list};
    pid_t watcher{-1};  // its query jail's; -1 when asked of the waiting attach jail
    UniqueFd answer;    // asked of the waiting attach jail: its channel, where the stub's answer comes
    pid_t asked_of{-1};  // that jail's watcher
    bool reaped{false};  // its jail reaped, or the waiting jail's answer read (or lost)
    int status{-1};  // its wait status, once reaped
    bool answered{false};
    UniqueFd out, err;  // non-blocking read ends; invalid at end of file
    std::string out_text, err_text;
    std::chrono::steady_clock::time_point deadline;
};

// Starts the query jail for `kind` (list: list-sessions; kill: kill-session
// -t =SESSION, then list-sessions): stdin /dev/null, stdout and stderr on
// pipes. Its deadline is kTenantQueryDeadlineMs from now.
Result<RunningQuery> start_query(const OwnerContext& ctx, HandoverKind kind, const std::string& session);

// Asks the tenant's waiting attach jail (its watcher `watcher`, its
// channel `chan`, started and not answering another query) the same:
// its stub runs the client in the jail (helper/stub), with stdout and
// stderr on pipes as above, and answers "exit N" on the channel (read
// from a copy of it, `answer`, so that the jail, handed to an attach
// meanwhile, still answers). No jail is started.
Result<RunningQuery> ask_waiting_jail(const OwnerContext& ctx, HandoverKind kind, const std::string& session,
                                      int chan, pid_t watcher);

// Reads the waiting jail's answer from q.answer, if it has come: the
// query's client has ended (its status), or the jail has (no answer).
void read_query_status(RunningQuery& q);

// Reads what is readable on `fd` (one of q's): up to 64 KiB a stream are
// kept, the rest read and dropped (a client never blocks on a full pipe).
void read_query_output(RunningQuery& q, int fd);

// The answer once the jail has ended and both streams are at their end
// (ready), or no_answer for a jail that did not end well.
bool query_ready(const RunningQuery& q);
QueryAnswer query_answer(const RunningQuery& q);

// An OOM kill in the tenant's jails, told on its terminals: a child of
// the supervisor (reaped by its loop, which it never delays) runs one query
// jail for `list-clients`, then one per terminal (at most
// kMaxNoticeClients) for `display-message` of `line`, each within
// kTenantQueryDeadlineMs, in the query leaf (its own allowance: the jails
// leaf is at its limit). Returns the child's pid, or the fork's error.
Result<pid_t> notify_oom(const OwnerContext& ctx, const std::string& line);

}  // namespace clihost
