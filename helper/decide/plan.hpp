// plan.hpp: the pure heart. From the policy, the validated tenant, the request
// and what the host probe found, compute the exact environment and bwrap argv.
// No syscalls: `print` shows this, unit tests assert it whole, launch obeys it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "decide/config.hpp"
#include "decide/identity.hpp"
#include "decide/host_facts.hpp"
#include "base/result.hpp"
#include "base/start_state.hpp"  // CallerEnv
#include "version.hpp"

namespace clihost {

// The fd number the plan names in "--seccomp N"; bwrap_exec.cpp puts it there.
// The lowest after stdio, so that a caller's low RLIMIT_NOFILE cannot make
// the number itself invalid.
inline constexpr int kSeccompFd = 3;

inline constexpr std::string_view kSafePath = kDefaultJailPath;  // config.hpp
inline constexpr std::string_view kTmux = "/usr/bin/tmux";
// The attach stub (CMake CLIHOST_JAIL_ATTACH_STUB): under a ro_bind
// directory, as tmux is, so every jail sees it at this path.
inline constexpr std::string_view kAttachStub = CLIHOST_JAIL_ATTACH_STUB;
// The session jail's tmux server preloads it (helper/stub/oom_preload.cpp):
// every process the server forks raises its oom_score_adj to 1000, so that
// the OOM killer takes the tenant's work before its tmux server.
inline constexpr std::string_view kOomPreload = CLIHOST_JAIL_OOM_PRELOAD;
inline constexpr std::string_view kDefaultShell = "/bin/sh";
// The fd on which bwrap reports a one-off jail's status (--json-status-fd):
// its "exit-code" line is written only when the command really ran, which
// tells bwrap's own setup failure (exit 1, no such line) from the command's.
inline constexpr int kStatusFd = 4;
// An isolated jail's start-up (net.hpp): bwrap writes its child's pid on
// kInfoFd (--info-fd), waits on kBlockFd (--block-fd) until the network is
// attached, and copies the jail's resolv.conf from kResolvFd.
inline constexpr int kInfoFd = 5;
inline constexpr int kBlockFd = 6;
inline constexpr int kResolvFd = 7;
// An attach jail's and a one-off jail's command is the attach stub
// (helper/stub), started before its connection: it waits on kAttachFd for
// the command's argv and environment (handed_command, handed_env) and the
// caller's descriptors (an attach's terminal; a one-off's stdio).
inline constexpr int kAttachFd = 8;
// Files a jail sees whose text the plan holds (Plan::data): bwrap copies
// data file i from kDataFd + i (--ro-bind-data), read-only, mode 0444.
inline constexpr int kDataFd = 9;
inline constexpr std::size_t kMaxDataFiles = 2;
// The jail's file under /etc/profile.d that applies [jail] setenv again in
// every login shell, after /etc/profile reset PATH (profile_script).
inline constexpr std::string_view kProfileScript = "/etc/profile.d/zz-clihost-jail.sh";
// The session jail's own settings, readable inside it (jail_info_json):
// kJailInfoDir is the tenant's directory of kJailViewRoot (jail_view_dir),
// bound read-only; its supervisor replaces kJailInfoFile there whole.
inline constexpr std::string_view kJailInfoDir = "/run/clihost-jail";
inline constexpr std::string_view kJailInfoFile = "/run/clihost-jail/jail.json";
// Root's, mode 0711, beside the runtime directory (which is 0700: no
// tenant's bwrap could bind a path under it).
inline constexpr std::string_view kJailViewRoot = CLIHOST_JAIL_RUNTIME_DIR "-view";

// A jail's network.
enum class JailNet {
    none,      // client jails: no network at all (--unshare-net)
    tenant_empty,  // an attach jail: no network at all, in the tenant's empty
                   // namespace its session jail holds (joined before bwrap:
                   // no --unshare-net, whose namespace costs every connection)
    host,      // network = host: the host's, shared
    isolated,  // network = isolated: its own namespace with slirp4netns
};
std::string_view jail_net_name(JailNet net);

// What a jail is for. It decides the jail's shape and command; the command
// line's Verb does not (one `run` plans two jails: the session jail and the
// attach jail).
enum class JailAction {
    serve,          // the session jail: the tenant's tmux server in the foreground,
                    // in a session of its own, detached from any connection
    attach,         // the attach jail: a tmux client attaching to (creating) a session
    kill_session,   // a client jail ending one tmux session
    list_sessions,  // a client jail listing the tmux sessions
    command,        // a one-off jail running the caller's command (allow_caller_command)
};

std::string_view jail_action_name(JailAction action);

// Client jails only talk to the session jail's tmux server through its
// socket: no network at all, and nothing of them outlives the connection.
bool is_client_action(JailAction action);

// What the action decides of bwrap's argv (render_bwrap_argv) and of the
// jail's start (proc/jail_start.hpp, whose kinds agree): the session jail in
// a session of its own (--new-session); a one-off jail's status reported on
// kStatusFd (--json-status-fd).
constexpr bool plans_own_session(JailAction action) { return action == JailAction::serve; }
constexpr bool plans_status_report(JailAction action) { return action == JailAction::command; }

struct Request {
    JailAction action{JailAction::attach};
    std::string session;               // attach and kill_session
    std::vector<std::string> command;  // command only
    // attach only: the tenant's empty network namespace is at hand (its
    // session jail holds one) and the attach jail joins it.
    bool joins_tenant_netns{false};
    // attach only: a line tmux shows on the client once attached (its
    // supervisor's, attach_notice: never a word of the tenant's); "": none.
    std::string notice{};
};

// One filesystem step of the jail, in bwrap's order.
struct Mount {
    enum class Kind { ro_bind, bind, symlink, dev, remount_ro, proc, tmpfs, resolv_conf, data };
    Kind kind;
    std::string source;  // ro_bind/bind: the host path; symlink: the link's target
    std::string dest;
    std::uint64_t size{0};  // tmpfs: its size in bytes (bwrap --size); data: its index in Plan::data
};

// A file of the jail's made from text (Mount::Kind::data).
struct DataFile {
    std::string dest;
    std::string text;
};

struct Plan {
    JailAction action{JailAction::attach};
    TenantCreds creds;                  // who runs it (dropped to and verified)
    std::string home;                   // the tenant's home, bound read-write, the cwd
    std::string bwrap;                  // absolute path, exec'd without PATH lookup
    JailNet net{JailNet::none};
    std::vector<std::string> net_argv;  // isolated: the user-mode network process (net.hpp)
    std::string resolv_conf;            // isolated: the jail's /etc/resolv.conf
    std::vector<DataFile> data;         // at most kMaxDataFiles, from kDataFd on
    bool nested_sandbox{false};         // may create user namespaces (no --disable-userns)
    std::vector<Mount> mounts;          // after --dev and before the home's bind
    std::vector<std::string> command;   // what bwrap runs in the jail
    std::vector<std::string> argv;      // render_bwrap_argv(*this); argv[0] == bwrap
    std::vector<std::string> env;       // "NAME=value", the exec environment
    std::string socket_dir;             // $HOME/.cache/tmux, made by the tenant
    std::string proc_source;            // "private" or "host" (for the audit log)
    std::vector<std::string> warnings;  // each is audit-logged at launch
    // proc = private with the host trial deferred: the jail child must prove,
    // right before exec, that a fresh procfs can be mounted, or refuse (exit 3).
    bool trial_in_child{false};
    // An attach jail and a one-off jail. Their bwrap argv and env are the
    // same for every connection (command: the attach stub; env: none), so
    // that the jail can start before its connection; the connection's own
    // command (a tmux client, the caller's command) and environment are
    // handed to the stub with the caller's descriptors.
    std::vector<std::string> handed_command;
    std::vector<std::string> handed_env;
};

// What a jail's stub is handed with the caller's descriptors (helper/stub):
// handed_command and handed_env as base/handed.hpp lays them out, in at
// most kMaxHandedBytes (a whole request, kMaxRequestBytes, and the jail's
// own environment); empty when they cannot be handed (handed.hpp).
inline constexpr std::size_t kMaxHandedBytes = std::size_t{128} * 1024;
std::string handed_words(const Plan& plan);

// A query (list, kill) asked of a waiting attach jail's stub (query.hpp):
// kQueryWord, then the query plan's command and env as handed_words lays
// them out (empty when they would not be handed). The stub answers
// "exit N" once its client has ended, in at most kMaxStubAnswer bytes.
inline constexpr std::string_view kQueryWord{"query\0", 6};
inline constexpr std::size_t kMaxStubAnswer = 16;
std::string query_words(const Plan& plan);

// The shell tmux starts in the jail: [jail] shell if set, else the login shell.
std::string jail_shell(const Policy& policy, const Account& tenant);

// HOME, USER, LOGNAME, SHELL, PATH (setenv's PATH if it has one); then the
// other setenv values, "$HOME" expanded; then well-formed extra_env values
// from the caller; then PAM's environment (never overriding); TTYD_SANDBOX=true last.
std::vector<std::string> build_environment(const Policy& policy, const Account& tenant, const CallerEnv& caller,
                                           const std::vector<std::string>& pam_env);

// The tenant's tmux socket, served by its session jail.
std::string tmux_socket(const Account& tenant);

// The tmux command of a jail action (not for JailAction::command). An
// attach with a notice shows it until a key is pressed (display-message -d 0).
std::vector<std::string> tmux_command(const Account& tenant, JailAction action, std::string_view session,
                                      std::string_view notice = {});

// An OOM notice's tmux commands (query jails, query.cpp:notify_oom): the
// clients' terminals, then a message on one (-d 0: until a key is pressed).
// `line` is the supervisor's own (tenant_output.hpp oom_notice): no '#', so
// tmux expands nothing in it.
std::vector<std::string> tmux_clients_command(const Account& tenant);
std::vector<std::string> tmux_notice_command(const Account& tenant, const std::string& client, const std::string& line);

// The one rendering of a plan as bwrap's argv: what `print` shows and
// launch execs.
std::vector<std::string> render_bwrap_argv(const Plan& plan);

// A request that validate_request passed. Only validate_request makes
// one, and the build_plan that takes one validates nothing again: a request
// is validated once in each process that plans it (the front, to refuse
// before the account check or a supervisor's start; the supervisor,
// against the policy it runs with, before PAM for its session jail and per
// connection for the others), never twice.
class ValidRequest {
public:
    const Request& request() const { return r_; }

private:
    explicit ValidRequest(Request r) : r_(std::move(r)) {}
    Request r_;
    friend Result<ValidRequest> validate_request(const Policy& policy, const Account& tenant, Request request,
                                                 const HostProbe& probe);
};

// Every refusal build_plan can make that depends only on the policy, the
// tenant, the request and the probe (a caller's command the policy does not
// allow, a nologin shell without [jail] shell, a session name, a home too
// long for a socket, a /proc the policy cannot have), made before anything
// acts (a PAM session is opened, a session jail started), so that a request
// refused by the policy leaves no trace beyond its refusal. Pure.
Result<ValidRequest> validate_request(const Policy& policy, const Account& tenant, Request request,
                                      const HostProbe& probe);

// The plan of a validated request, with the same policy, tenant and probe.
Result<Plan> build_plan(const Policy& policy, const Tenant& tenant, const ValidRequest& valid_request,
                        const HostProbe& probe, const CallerEnv& caller_env, const std::vector<std::string>& pam_env);
// validate_request, then the above: for a request planned once.
Result<Plan> build_plan(const Policy& policy, const Tenant& tenant, const Request& request, const HostProbe& probe,
                        const CallerEnv& caller_env, const std::vector<std::string>& pam_env);

// POSIX-shell quoting for `print`: the output can be pasted into sh.
std::string shell_quote(std::string_view word);

// The text of kProfileScript: for a POSIX shell, each [jail] setenv entry
// exported again with the tenant's value, PATH as the operator set it
// followed by the entries other profile scripts added. Empty without
// setenv. The tenant's ~/.profile runs after it and may change anything.
std::string profile_script(const Policy& policy, const Account& tenant);

// For `print`: each of plan.data as "# DEST in the jail (fd N):" and its
// lines, each after "#   ".
std::string render_data_files(const Plan& plan);

// The reason of the audit line that allows a planned jail to start: `what`,
// then each of the plan's warnings as "; warning: W". One line per launch,
// its caveats in it (a syslog line per warning cost a launch in host mode
// 2.5 %: issue 15).
std::string audit_reason(std::string what, const Plan& plan);

}  // namespace clihost
