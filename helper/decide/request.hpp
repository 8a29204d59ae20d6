// request.hpp: the messages between a front (`run`, what ttyd runs) and its
// tenant's supervisor, over the supervisor's endpoint (a SOCK_SEQPACKET
// socket, root's, in the runtime directory). Pure: formatting and bounded
// parsing only, no system calls; fuzzed (tests/fuzz/fuzz_request.cpp).
//
// front -> supervisor, first message (with the jail's stdio as SCM_RIGHTS):
//   "clihost-jail-request VERSION" NUL fields... (see format_request)
// front -> supervisor, afterwards: "sig N" (a signal to relay to the jail's
//   process group: WINCH, TSTP, CONT, and a one-off's INT, QUIT) or "hup" /
//   "term" (end the jail with SIGHUP / SIGTERM).
// supervisor -> front: "ok" (the jail started), "exit N" (its status),
//   "retry" (the session jail is ending: attach to a new one), or
//   "fail CODE MESSAGE" (refused; CODE is an exit code 1-4).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "base/start_state.hpp"  // CallerEnv

namespace clihost {

// The protocol version this build speaks. A supervisor refuses a request of
// any other version, and a front a supervisor record of another format.
inline constexpr int kProtocolVersion = 2;
// Bounds of a request (a message larger than this is refused unread).
inline constexpr std::size_t kMaxRequestBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxRequestArgs = 256;
inline constexpr std::size_t kMaxRequestEnv = 32;

// What a front asks its supervisor to start.
enum class HandoverKind {
    attach,   // an attach jail: a tmux client on the handed-over terminal
    command,  // a one-off jail: the command on the handed-over stdio
};

struct HandoverRequest {
    int version{kProtocolVersion};
    HandoverKind kind{HandoverKind::attach};
    std::string session;               // attach and command
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

// A front's message after the request.
struct Relay {
    bool hangup{false};
    int signal{0};  // hangup: SIGHUP or SIGTERM; else one of relayable_signal()
};
bool relayable_signal(int sig);
std::string format_relay(const Relay& r);
Result<Relay> parse_relay(std::string_view msg);

}  // namespace clihost
