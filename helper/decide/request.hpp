// request.hpp: the messages between a front (`run`, what ttyd runs) and its
// tenant's supervisor, over the supervisor's endpoint (a SOCK_SEQPACKET
// socket, root's, in the runtime directory). Pure: formatting and bounded
// parsing only, no system calls; fuzzed (tests/fuzz/fuzz_request.cpp).
//
// front -> supervisor, first message (an attach's or one-off's with the
// jail's stdio as SCM_RIGHTS; a query's, list or kill, with none):
//   "clihost-jail-request VERSION" NUL fields... (see format_request)
// front -> supervisor, afterwards: "sig N" (a signal to relay to the jail's
//   process group: WINCH, TSTP, CONT, and a one-off's INT, QUIT) or "hup" /
//   "term" (end the jail with SIGHUP / SIGTERM).
// supervisor -> front: "ok" (the jail started), "exit N" (its status),
//   "retry" (the session jail is ending: attach to a new one), or
//   "fail CODE MESSAGE" (refused; CODE is an exit code 1-4); to a query,
//   one answer (format_answer) or a "fail" reply.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "base/start_state.hpp"  // CallerEnv

namespace clihost {

// The protocol version this build speaks. A supervisor refuses a request of
// any other version, and a front a supervisor record of another format.
inline constexpr int kProtocolVersion = 3;
// Bounds of a request (a message larger than this is refused unread).
inline constexpr std::size_t kMaxRequestBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxRequestArgs = 256;
inline constexpr std::size_t kMaxRequestEnv = 32;

// What a front asks its supervisor to start.
enum class HandoverKind {
    attach,   // an attach jail: a tmux client on the handed-over terminal
    command,  // a one-off jail: the command on the handed-over stdio
    list,     // a query: the tenant's tmux sessions (no descriptors)
    kill,     // a query: end one tmux session (no descriptors)
};

// Whether a request of `kind` is a query (list, kill): it carries no
// descriptors, and its answer is a QueryAnswer.
bool is_query(HandoverKind kind);

struct HandoverRequest {
    int version{kProtocolVersion};
    HandoverKind kind{HandoverKind::attach};
    std::string session;               // attach, command and kill; empty for list
    std::vector<std::string> command;  // command only, non-empty
    CallerEnv extra_env;               // the caller's candidate extra_env values
    // The caller, for the supervisor's audit lines.
    std::string caller;
    long caller_uid{-1};
    std::string via;
    std::string sudo_uid;  // "-" when none
};

std::string format_request(const HandoverRequest& r);
// Strict: a version other than kProtocolVersion is refused with a message
// naming both versions; any malformed field, bound exceeded or NUL missing
// is refused. Never throws on any input but bad_alloc.
Result<HandoverRequest> parse_request(std::string_view msg);

// The supervisor's replies.
enum class ReplyKind { ok, exit, retry, fail };
struct Reply {
    ReplyKind kind{ReplyKind::fail};
    int code{4};          // exit: the status (0-255); fail: the exit code (1-4)
    std::string message;  // fail only
};
std::string format_reply(const Reply& r);
Result<Reply> parse_reply(std::string_view msg);

// Every query of a tenant's tmux (list, kill) ends within this: a tenant's
// hook that sleeps delays nobody past it.
inline constexpr int kTenantQueryDeadlineMs = 2000;
// Bounds of a query's answer: at most this many session names, the whole
// message at most this long, tmux's line at most this long.
inline constexpr std::size_t kMaxAnswerSessions = 1024;
inline constexpr std::size_t kMaxAnswerBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxAnswerSaid = 512;

// The supervisor's answer to a query. Its content (names, tmux's line) is
// the tenant's, raw: a front escapes it (tenant_output.hpp) before showing it.
struct QueryAnswer {
    enum class Kind {
        sessions,         // list: the tenant's sessions; kill: done, the sessions left
        no_answer,        // its tmux did not answer within kTenantQueryDeadlineMs, or failed
        not_killed,       // kill: tmux refused; `said` is its first stderr line
        no_session_jail,  // kill: the supervisor runs no session jail
    };
    Kind kind{Kind::no_answer};
    std::vector<std::string> sessions;  // sessions: tmux names (no NUL, no newline)
    std::string said;                   // not_killed (no NUL, no newline)
};
// `answer` NUL kind NUL [names or said, each NUL-terminated]. Formatting
// drops what exceeds the bounds; parsing refuses it.
std::string format_answer(const QueryAnswer& a);
Result<QueryAnswer> parse_answer(std::string_view msg);
// The answer to a query from what its tmux client wrote and how it ended:
// the names one a line (list-sessions -F '#{session_name}'), tmux's first
// stderr line for a kill it refused.
QueryAnswer answer_of(HandoverKind kind, int status, std::string_view out, std::string_view err);

// A front's message after the request.
struct Relay {
    bool hangup{false};
    int signal{0};  // hangup: SIGHUP or SIGTERM; else one of relayable_signal()
};
bool relayable_signal(int sig);
std::string format_relay(const Relay& r);
Result<Relay> parse_relay(std::string_view msg);

}  // namespace clihost
