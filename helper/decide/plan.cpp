// plan.cpp: environment and bwrap argv builders.
#include "decide/plan.hpp"
#include "base/validate.hpp"

#include <algorithm>

#include "base/handed.hpp"
#include "decide/cli.hpp"
#include "decide/jail_files.hpp"
#include "decide/net_plan.hpp"
#include "decide/proc_decision.hpp"
#include "decide/tenant_output.hpp"

namespace clihost {
namespace {

bool has_name(const std::vector<std::string>& env, std::string_view name) {
    return std::any_of(env.begin(), env.end(), [&](const std::string& e) {
        return e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=';
    });
}

// PAM's values come from root's pam_env configuration: any printable text.
bool is_printable(std::string_view v) {
    return v.size() <= 4096 && std::all_of(v.begin(), v.end(), [](char c) {
               return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
           });
}

std::string tmux_socket_dir(const Account& tenant) { return tenant.home + "/.cache/tmux"; }

}  // namespace

std::vector<std::string> build_environment(const Policy& policy, const Account& tenant, const CallerEnv& caller,
                                           const std::vector<std::string>& pam_env) {
    std::vector<std::string> env{
        "HOME=" + tenant.home,
        "USER=" + tenant.name,
        "LOGNAME=" + tenant.name,
        "SHELL=" + jail_shell(policy, tenant),
        "PATH=" + std::string(kSafePath),
    };
    // The operator's fixed values (config.cpp validated them: no identity
    // variable, no loader variable, PATH keeping the default's entries),
    // before the caller's and PAM's, which never override them.
    // Not trusted to be parsed: an item the parser would refuse is dropped.
    for (const auto& e : policy.setenv) {
        if (!parse_setenv(e.name + "=" + e.value)) continue;
        const std::string value = expand_home(e.value, tenant.home);
        if (e.name == "PATH") env[4] = "PATH=" + value;
        else if (!has_name(env, e.name)) env.push_back(e.name + "=" + value);
    }
    for (const auto& name : policy.extra_env) {
        if (is_reserved_env_name(name) || has_name(env, name)) continue;
        auto it = caller.find(name);
        if (it != caller.end() && is_well_formed_env_value(it->second)) env.push_back(name + "=" + it->second);
    }
    for (const auto& kv : pam_env) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        const auto name = std::string_view(kv).substr(0, eq);
        if (!is_valid_env_name(name) || is_reserved_env_name(name) || has_name(env, name)) continue;
        if (!is_printable(std::string_view(kv).substr(eq + 1))) continue;
        env.push_back(kv);
    }
    // Forced, last, never from the caller: the jailed tools rely on it to know
    // they are sandboxed (the old chain lost it through runuser's env reset).
    env.emplace_back("TTYD_SANDBOX=true");
    return env;
}

std::vector<std::string> tmux_command(const Account& tenant, JailAction action, std::string_view session,
                                      std::string_view notice) {
    // tmux itself turns '.' into '_', which made the caller's x.y and x_y
    // one session: '.' becomes '+' here, outside the caller's alphabet and
    // kept by tmux (tmux_session_name), so distinct names stay distinct
    // sessions and `list` gives the caller its own names back.
    const std::string name = tmux_session_name(session);
    const std::string tmux(kTmux);
    const std::string socket = tmux_socket(tenant);
    switch (action) {
        case JailAction::serve:
            // -D: the server in the foreground, as bwrap's command: bwrap ends
            // the jail's pid namespace when its command exits, so a daemonising
            // tmux would take everything with it at once. -D also turns
            // exit-empty off until the first attach turns it on.
            return {tmux, "-S", socket, "-D"};
        case JailAction::attach:
            // -N: a client never starts a server. A server started here would
            // run the tenant's shells in this connection's jail, which has no
            // network and dies with the connection. exit-empty on, first and in
            // the same command list: once the last session ends the server
            // exits, and so does the session jail; and should this attach fail
            // to create its session (no terminal, say), an empty session jail
            // does not linger.
            // A notice after the attach, on the client's own status line.
            if (!notice.empty())
                return {tmux, "-N", "-S", socket, "set-option", "-s", "exit-empty", "on", ";", "new-session", "-A",
                        "-s", name, ";", "display-message", "-d", "0", std::string(notice)};
            return {tmux, "-N", "-S", socket, "set-option", "-s", "exit-empty", "on", ";", "new-session", "-A",
                    "-s", name};
        case JailAction::kill_session:
            // "=" asks tmux for an exact match: "-t dev" must never kill "dev2".
            // Then the sessions left, none when it was the last: the session
            // jail is then ending, and `kill` returns once it is gone.
            return {tmux, "-N", "-S", socket, "kill-session", "-t", "=" + name, ";", "list-sessions", "-F",
                    "#{session_name}"};
        case JailAction::list_sessions:
            return {tmux, "-N", "-S", socket, "list-sessions", "-F", "#{session_name}"};
        case JailAction::command: break;
    }
    return {};
}

std::vector<std::string> tmux_clients_command(const Account& tenant) {
    return {std::string(kTmux), "-N", "-S", tmux_socket(tenant), "list-clients", "-F", "#{client_name}"};
}

std::vector<std::string> tmux_notice_command(const Account& tenant, const std::string& client, const std::string& line) {
    return {std::string(kTmux), "-N", "-S", tmux_socket(tenant), "display-message", "-d", "0", "-c", client, line};
}

std::vector<std::string> render_bwrap_argv(const Plan& plan) {
    // A new user namespace makes bwrap run unprivileged; new pid and ipc
    // namespaces hide other tenants' processes and SysV/POSIX IPC.
    std::vector<std::string> a{plan.bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc"};
    // A client jail reaches the session jail through the socket's path
    // (path sockets do not depend on the network namespace) and nothing else.
    // An isolated jail's network namespace has only slirp4netns's link to
    // the outside, attached (net.hpp) while bwrap waits on kBlockFd. An
    // attach jail that joins the tenant's empty namespace (its watcher does,
    // as root, before the drop) makes none.
    if (plan.net == JailNet::none || plan.net == JailNet::isolated) a.emplace_back("--unshare-net");
    if (plan.net == JailNet::isolated)
        a.insert(a.end(), {"--info-fd", std::to_string(kInfoFd), "--block-fd", std::to_string(kBlockFd)});
    // No nested user namespaces unless the operator allows them for the
    // tenants' own sandboxes: each one hands the tenant "root" over new
    // namespaces and reaches kernel code (netfilter, mount, fs contexts) that
    // has had privilege-escalation bugs (CVE-2022-0185, CVE-2023-32233).
    if (!plan.nested_sandbox) a.emplace_back("--disable-userns");
    // Nothing of the jail outlives the process that started it (the session
    // jail's watcher, or the connection's helper process).
    a.emplace_back("--die-with-parent");
    // The session jail belongs to no terminal and no caller's process group
    // or session: nothing a connection does reaches it as a signal.
    if (plans_own_session(plan.action)) a.emplace_back("--new-session");
    if (plans_status_report(plan.action)) a.insert(a.end(), {"--json-status-fd", std::to_string(kStatusFd)});
    // No TIOCSTI/TIOCLINUX into the caller's terminal (seccomp_filter.hpp);
    // kept with nested_sandbox: filters are inherited by every inner sandbox.
    a.insert(a.end(), {"--seccomp", std::to_string(kSeccompFd)});
    // The jail's environment is exactly ours, whatever bwrap inherits.
    a.emplace_back("--clearenv");
    // The tmux server's fork handler (kOomPreload), for the server alone:
    // bwrap's own environment (plan.env) never has it, and the library takes
    // it out of the server's before tmux copies that to its panes. First,
    // so that the jail's environment still ends with TTYD_SANDBOX=true.
    if (plan.action == JailAction::serve) a.insert(a.end(), {"--setenv", "LD_PRELOAD", std::string(kOomPreload)});
    for (const auto& kv : plan.env) {
        const auto eq = kv.find('=');
        a.insert(a.end(), {"--setenv", kv.substr(0, eq), kv.substr(eq + 1)});
    }
    for (const auto& m : plan.mounts) {
        switch (m.kind) {
            case Mount::Kind::ro_bind: a.insert(a.end(), {"--ro-bind", m.source, m.dest}); break;
            case Mount::Kind::bind: a.insert(a.end(), {"--bind", m.source, m.dest}); break;
            case Mount::Kind::symlink: a.insert(a.end(), {"--symlink", m.source, m.dest}); break;
            case Mount::Kind::dev: a.insert(a.end(), {"--dev", m.dest}); break;
            case Mount::Kind::remount_ro: a.insert(a.end(), {"--remount-ro", m.dest}); break;
            case Mount::Kind::proc: a.insert(a.end(), {"--proc", m.dest}); break;
            case Mount::Kind::resolv_conf: a.insert(a.end(), {"--ro-bind-data", std::to_string(kResolvFd), m.dest}); break;
            case Mount::Kind::data:
                a.insert(a.end(), {"--perms", "0444", "--ro-bind-data",
                                   std::to_string(kDataFd + static_cast<int>(m.size)), m.dest});
                break;
            case Mount::Kind::tmpfs:
                // bwrap applies --size to the next --tmpfs only.
                if (m.size != 0) a.insert(a.end(), {"--size", std::to_string(m.size)});
                a.insert(a.end(), {"--tmpfs", m.dest});
                break;
        }
    }
    a.insert(a.end(), {"--chdir", plan.home, "--"});
    a.insert(a.end(), plan.command.begin(), plan.command.end());
    return a;
}

namespace {

// The jail's filesystem: the host's system directories read-only (only
// those that exist), its own /dev and /proc (or the host's read-only, as
// decided), private tmpfs mounts, and the tenant's home read-write.
std::vector<Mount> plan_mounts(const Policy& policy, const Account& t, const HostProbe& probe, bool private_proc) {
    std::vector<Mount> m;
    for (const auto& hp : probe.paths) {
        if (hp.kind == HostPath::Kind::directory) m.push_back({Mount::Kind::ro_bind, hp.path, hp.path});
        else if (hp.kind == HostPath::Kind::symlink) m.push_back({Mount::Kind::symlink, hp.target, hp.path});
    }
    // Every tmpfs is sized: tmpfs defaults to half of the host's RAM per
    // mount, and a tenant filling it takes that memory from everyone.
    // bwrap's --dev is itself an unsized tmpfs, owned by the tenant, and
    // --size cannot apply to it (bwrap 0.8: "--size must be followed by
    // --tmpfs"). So it is made read-only once populated (its device nodes
    // and /dev/pts are mounts of their own and keep working), and /dev/shm,
    // the one place programs write under /dev, gets a sized tmpfs on top.
    m.push_back({Mount::Kind::dev, "", "/dev"});
    m.push_back({Mount::Kind::remount_ro, "", "/dev"});
    m.push_back({Mount::Kind::tmpfs, "", "/dev/shm", policy.tmpfs_size});
    if (private_proc) m.push_back({Mount::Kind::proc, "", "/proc"});
    else m.push_back({Mount::Kind::ro_bind, "/proc", "/proc"});
    for (const auto& dir : policy.tmpfs) m.push_back({Mount::Kind::tmpfs, "", dir, policy.tmpfs_size});
    m.push_back({Mount::Kind::bind, t.home, t.home});
    return m;
}

}  // namespace

Result<Plan> build_plan(const Policy& policy, const Tenant& tenant, const Request& request, const HostProbe& probe,
                        const CallerEnv& caller_env, const std::vector<std::string>& pam_env) {
    auto valid = validate_request(policy, tenant.account, request, probe);
    if (!valid) return valid.error();
    return build_plan(policy, tenant, valid.value(), probe, caller_env, pam_env);
}

Result<Plan> build_plan(const Policy& policy, const Tenant& tenant, const ValidRequest& valid_request,
                        const HostProbe& probe, const CallerEnv& caller_env, const std::vector<std::string>& pam_env) {
    const Account& t = tenant.account;
    const Request& request = valid_request.request();
    auto proc = decide_proc(policy.proc, probe);
    if (!proc) return proc.error();
    Plan plan;
    plan.action = request.action;
    plan.creds = creds_of(tenant);
    plan.home = t.home;
    plan.bwrap = policy.bwrap;
    plan.net = request.joins_tenant_netns                 ? JailNet::tenant_empty
               : is_client_action(request.action)         ? JailNet::none
               : policy.network == NetworkMode::host      ? JailNet::host
                                                          : JailNet::isolated;
    if (plan.net == JailNet::isolated) {
        plan.net_argv = user_net_argv();
        plan.resolv_conf = std::string(kJailResolvConf);
    }
    if (plan.net == JailNet::host)
        plan.warnings.emplace_back("network = host: the jail shares the host's network (services on its loopback and "
                                   "addresses, other tenants' listeners, abstract sockets)");
    // The tenants' own sandboxes run where their work runs, never in a
    // client jail (a tmux client needs none).
    plan.nested_sandbox = policy.nested_sandbox && !is_client_action(request.action);
    plan.socket_dir = tmux_socket_dir(t);

    plan.proc_source = proc.value().source();
    plan.trial_in_child = proc.value().prove_before_exec;
    plan.warnings.insert(plan.warnings.end(), proc.value().warnings.begin(), proc.value().warnings.end());
    // An inner bwrap writes its uid_map under /proc/self and mounts a procfs
    // of its own: neither works over the host's /proc bound read-only.
    if (plan.nested_sandbox && !proc.value().private_proc)
        plan.warnings.emplace_back("nested_sandbox = true but /proc is the host's (read-only): inner sandboxes "
                                   "cannot start");
    plan.env = build_environment(policy, t, caller_env, pam_env);
    plan.command =
        request.action == JailAction::command ? request.command
                                              : tmux_command(t, request.action, request.session, request.notice);
    // The stub's jail: the same bwrap argv for every connection, so that
    // it can start before one (a one-off's command and environment, as an
    // attach's client, go to the stub with the caller's descriptors).
    if (request.action == JailAction::attach || request.action == JailAction::command) {
        plan.handed_command = std::move(plan.command);
        plan.handed_env = std::move(plan.env);
        plan.command = {std::string(kAttachStub)};
        plan.env.clear();
    }
    plan.mounts = plan_mounts(policy, t, probe, proc.value().private_proc);
    // The host's resolv.conf may name a resolver on its loopback
    // (127.0.0.53), which is not the jail's: slirp4netns's forwarder is.
    // After the system binds (/etc), before the home.
    if (plan.net == JailNet::isolated)
        plan.mounts.insert(plan.mounts.end() - 1, Mount{Mount::Kind::resolv_conf, "", "/etc/resolv.conf"});
    // The jails that run the tenant's shells.
    if (request.action == JailAction::serve) plan_jail_info(plan, t);
    if (request.action == JailAction::serve || request.action == JailAction::command) plan_profile(plan, policy, t, probe);
    plan.argv = render_bwrap_argv(plan);
    return plan;
}

std::string handed_words(const Plan& plan) { return encode_handed(plan.handed_command, plan.handed_env, kMaxHandedBytes); }

std::string query_words(const Plan& plan) {
    if (plan.action != JailAction::list_sessions && plan.action != JailAction::kill_session) return {};
    const std::string words = encode_handed(plan.command, plan.env, kMaxHandedBytes);
    return words.empty() ? words : std::string(kQueryWord) + words;
}

std::string audit_reason(std::string what, const Plan& plan) {
    for (const auto& w : plan.warnings) what.append("; warning: ").append(w);
    return what;
}

std::string shell_quote(std::string_view word) {
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(word);
    std::string out = "'";
    for (char c : word) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

}  // namespace clihost
