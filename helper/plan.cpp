// plan.cpp: environment and bwrap argv builders.
#include "plan.hpp"

#include <algorithm>

#include "seccomp_filter.hpp"

namespace clihost {
namespace {

// sockaddr_un.sun_path is 108 bytes including the terminating NUL.
constexpr std::size_t kMaxSocketPath = 107;

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

bool is_well_formed_env_value(std::string_view value) {
    if (value.empty() || value.size() > 128) return false;
    return std::all_of(value.begin(), value.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || c == '@' || c == '+' || c == ':' || c == ',' || c == '=';
    });
}

std::vector<std::string> build_environment(const Policy& policy, const Account& tenant, const CallerEnv& caller,
                                           const std::vector<std::string>& pam_env) {
    std::vector<std::string> env{
        "HOME=" + tenant.home,
        "USER=" + tenant.name,
        "LOGNAME=" + tenant.name,
        "SHELL=" + (tenant.shell.empty() ? std::string(kDefaultShell) : tenant.shell),
        "PATH=" + std::string(kSafePath),
    };
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

std::vector<std::string> tmux_command(const Account& tenant, Verb verb, std::string_view session) {
    // tmux itself turns '.' and ':' in session names into '_'; doing it here
    // keeps new-session -A and the exact-match kill target the same name.
    std::string name(session);
    std::replace(name.begin(), name.end(), '.', '_');
    const std::string socket = tmux_socket_dir(tenant) + "/clihost.sock";
    if (verb == Verb::kill)
        // "=" asks tmux for an exact match: "-t dev" must never kill "dev2".
        return {std::string(kTmux), "-S", socket, "kill-session", "-t", "=" + name};
    return {std::string(kTmux), "-S", socket, "new-session", "-A", "-s", name};
}

std::vector<std::string> build_bwrap_argv(const Policy& policy, const Account& tenant, const HostProbe& probe,
                                          const std::vector<std::string>& env, bool private_proc,
                                          const std::vector<std::string>& command) {
    std::vector<std::string> a{policy.bwrap,
                               // A new user namespace makes bwrap run unprivileged; new pid and
                               // ipc namespaces hide other tenants' processes and SysV/POSIX IPC.
                               "--unshare-user", "--unshare-pid", "--unshare-ipc",
                               // No nested user namespaces: they add kernel attack surface and
                               // would let a tenant become "root" over its own mounts.
                               "--disable-userns",
                               // Nothing of the jail outlives the helper that started it.
                               "--die-with-parent",
                               // No TIOCSTI/TIOCLINUX into the caller's terminal (seccomp_filter.hpp).
                               "--seccomp", std::to_string(kSeccompFd),
                               // The jail's environment is exactly ours, whatever bwrap inherits.
                               "--clearenv"};
    for (const auto& kv : env) {
        const auto eq = kv.find('=');
        a.insert(a.end(), {"--setenv", kv.substr(0, eq), kv.substr(eq + 1)});
    }
    for (const auto& hp : probe.paths) {
        if (hp.kind == HostPath::Kind::directory) a.insert(a.end(), {"--ro-bind", hp.path, hp.path});
        else if (hp.kind == HostPath::Kind::symlink) a.insert(a.end(), {"--symlink", hp.target, hp.path});
    }
    // Every tmpfs is sized: tmpfs defaults to half of the host's RAM per
    // mount, and a tenant filling it takes that memory from everyone.
    const std::string size = std::to_string(policy.tmpfs_size);
    // bwrap's --dev is itself an unsized tmpfs, owned by the tenant, and
    // --size cannot apply to it (bwrap 0.8: "--size must be followed by
    // --tmpfs"). So it is made read-only once populated (its device nodes
    // and /dev/pts are mounts of their own and keep working), and /dev/shm,
    // the one place programs write under /dev, gets a sized tmpfs on top.
    a.insert(a.end(), {"--dev", "/dev", "--remount-ro", "/dev", "--size", size, "--tmpfs", "/dev/shm"});
    if (private_proc) a.insert(a.end(), {"--proc", "/proc"});
    else a.insert(a.end(), {"--ro-bind", "/proc", "/proc"});
    for (const auto& t : policy.tmpfs) a.insert(a.end(), {"--size", size, "--tmpfs", t});
    a.insert(a.end(), {"--bind", tenant.home, tenant.home, "--chdir", tenant.home, "--"});
    a.insert(a.end(), command.begin(), command.end());
    return a;
}

Result<Plan> build_plan(const Policy& policy, const Tenant& tenant, const Request& request, const HostProbe& probe,
                        const CallerEnv& caller_env, const std::vector<std::string>& pam_env) {
    const Account& t = tenant.account;
    if (!is_valid_session_name(request.session)) return fail(Exit::refused, "invalid session name");
    if (!request.command.empty() && request.verb != Verb::run) return fail(Exit::usage, "only run takes a command");
    // A caller-chosen command turns the helper into "run anything as any
    // tenant"; only an operator may enable that.
    if (!request.command.empty() && !policy.allow_caller_command)
        return fail(Exit::refused, "a command was given but allow_caller_command is false");
    // Only proc = private may defer the trial: its argv does not depend on it.
    if (probe.trial_deferred && policy.proc != ProcMode::private_only)
        return fail(Exit::internal, "the namespace trial was deferred for a mode that needs it");
    if (!probe.trial_deferred && !probe.user_namespaces)
        return fail(Exit::host, "user namespaces are unavailable: " + probe.trial_detail);

    Plan plan;
    plan.bwrap = policy.bwrap;
    plan.socket_dir = tmux_socket_dir(t);
    if (plan.socket_dir.size() + std::string_view("/clihost.sock").size() > kMaxSocketPath)
        return fail(Exit::refused, "home path too long for a tmux socket");

    bool private_proc = false;
    switch (policy.proc) {
        case ProcMode::private_only:
            plan.trial_in_child = probe.trial_deferred;
            if (!probe.trial_deferred && !probe.fresh_proc)
                return fail(Exit::host, "cannot mount a private /proc here (" + probe.trial_detail +
                                            "); refusing (proc = private)");
            private_proc = true;
            break;
        case ProcMode::private_or_hidepid:
            if (probe.fresh_proc) private_proc = true;
            // The host /proc is only acceptable when it hides other users' processes.
            else if (!probe.host_proc_hidepid)
                return fail(Exit::host, "cannot mount a private /proc (" + probe.trial_detail +
                                            ") and host /proc lacks hidepid=invisible; refusing");
            break;
        case ProcMode::inherit:
            plan.warnings.emplace_back("proc = inherit: the jail sees the host /proc");
            break;
    }
    plan.proc_source = private_proc ? "private" : "host";
    plan.env = build_environment(policy, t, caller_env, pam_env);
    const auto command = request.command.empty() ? tmux_command(t, request.verb, request.session) : request.command;
    plan.argv = build_bwrap_argv(policy, t, probe, plan.env, private_proc, command);
    return plan;
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
