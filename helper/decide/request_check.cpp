// request_check.cpp: what a request is (decide/plan.hpp's names) and
// whether the policy allows it (validate_request). The setuid front runs
// this to refuse before a supervisor's start; plan.cpp (the bwrap argv)
// is the supervisor's.
#include <algorithm>

#include "base/validate.hpp"
#include "decide/plan.hpp"
#include "decide/proc_decision.hpp"

namespace clihost {
namespace {

// sockaddr_un.sun_path is 108 bytes including the terminating NUL.
constexpr std::size_t kMaxSocketPath = 107;

std::string tmux_socket_dir(const Account& tenant) { return tenant.home + "/.cache/tmux"; }

}  // namespace

std::string_view jail_action_name(JailAction action) {
    switch (action) {
        case JailAction::serve: return "session";
        case JailAction::attach: return "attach";
        case JailAction::kill_session: return "kill";
        case JailAction::list_sessions: return "list";
        case JailAction::command: return "command";
    }
    return "?";
}

std::string_view jail_net_name(JailNet net) {
    switch (net) {
        case JailNet::none: return "none";
        case JailNet::tenant_empty: return "none (the tenant's empty namespace)";
        case JailNet::host: return "host";
        case JailNet::isolated: return "isolated";
    }
    return "?";
}

bool is_client_action(JailAction action) {
    return action == JailAction::attach || action == JailAction::kill_session || action == JailAction::list_sessions;
}

std::string tmux_socket(const Account& tenant) { return tmux_socket_dir(tenant) + "/clihost.sock"; }

std::string jail_shell(const Policy& policy, const Account& tenant) {
    if (!policy.shell.empty()) return policy.shell;
    return tenant.shell.empty() ? std::string(kDefaultShell) : tenant.shell;
}

Result<ValidRequest> validate_request(const Policy& policy, const Account& t, Request request,
                                      const HostProbe& probe) {
    const bool named = request.action == JailAction::attach || request.action == JailAction::kill_session;
    if (named && !is_valid_session_name(request.session)) return fail(Exit::refused, "invalid session name");
    if ((request.action == JailAction::command) != !request.command.empty())
        return fail(Exit::usage, "only a command jail takes a command, and it needs one");
    // A caller-chosen command turns the helper into "run anything as any
    // tenant"; only an operator may enable that.
    if (!request.command.empty() && !policy.allow_caller_command)
        return fail(Exit::refused, "a command was given but allow_caller_command is false");
    // A tenant whose login shell is nologin (as it should be: SECURITY.md,
    // "Routes around the jail") needs [jail] shell, or tmux would start
    // nologin, which exits at once. The session jail starts the shells (and
    // an attach asks it for one); kill, list and a caller's command start none.
    if ((request.action == JailAction::serve || request.action == JailAction::attach) &&
        is_refusing_shell(jail_shell(policy, t)))
        return fail(Exit::refused, "the login shell of " + t.name + " is " + t.shell +
                                       " and [jail] shell is not set: tmux would start it (set [jail] shell)");
    if (request.joins_tenant_netns && request.action != JailAction::attach)
        return fail(Exit::internal, "only an attach jail joins the tenant's empty network namespace");
    // tmux expands '#' in a message (#(...) runs a command in the tenant's
    // server): a notice is plain printable ASCII without it, at most a line.
    if (!request.notice.empty() &&
        (request.action != JailAction::attach || request.notice.size() > 256 ||
         !std::all_of(request.notice.begin(), request.notice.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '#'; })))
        return fail(Exit::internal, "a notice is one plain line, for an attach");
    if (tmux_socket_dir(t).size() + std::string_view("/clihost.sock").size() > kMaxSocketPath)
        return fail(Exit::refused, "home path too long for a tmux socket");
    auto proc = decide_proc(policy.proc, probe);
    if (!proc) return proc.error();
    return ValidRequest(std::move(request));
}

}  // namespace clihost
