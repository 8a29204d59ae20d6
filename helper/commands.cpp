// commands.cpp: run, kill, check, print.
#include "commands.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "audit_sink.hpp"
#include "cli.hpp"
#include "config_file.hpp"
#include "launch.hpp"
#include "log.hpp"
#include "pam_session.hpp"
#include "plan.hpp"
#include "privdrop.hpp"
#include "probe.hpp"
#include "trusted_path.hpp"
#include "version.hpp"

namespace clihost {
namespace {

constexpr uid_t kNobody = 65534;

int refuse(const Error& e) {
    log::refuse(e.code == Exit::refused || e.code == Exit::usage ? "deny" : "fail", e.message);
    return static_cast<int>(e.code);
}

std::string verb_name(Verb v) {
    switch (v) {
        case Verb::run: return "run";
        case Verb::kill: return "kill";
        case Verb::check: return "check";
        case Verb::print: return "print";
        case Verb::version: return "version";
        case Verb::help: return "help";
    }
    return "?";
}

// bwrap is exec'd as root's choice on the tenant's behalf: only root may
// have been able to put it there (doas' rule for its config, applied to the
// binary), and it must be executable.
Status check_bwrap(const Policy& policy) {
    auto f = open_trusted(policy.bwrap, Trust::must_exist);
    if (!f) return fail(Exit::host, "bwrap " + f.error().message);
    if ((f.value().st.st_mode & S_IXOTH) == 0 && (f.value().st.st_mode & S_IXUSR) == 0)
        return fail(Exit::host, "bwrap " + policy.bwrap + " is not executable");
    return ok_status();
}

// Linux-PAM silently falls back to /etc/pam.d/other when a service file is
// missing, and Debian's "other" stack admits everyone: refuse instead of
// running a session under rules nobody wrote for us.
Status check_pam_service(const Policy& policy) {
    auto f = open_trusted("/etc/pam.d/" + policy.pam_service, Trust::must_exist);
    if (!f) return fail(Exit::host, "PAM service " + policy.pam_service + ": " + f.error().message);
    return ok_status();
}

std::string tty_of_stdin() {
    char buf[256];
    if (::isatty(0) != 1 || ::ttyname_r(0, buf, sizeof buf) != 0) return {};
    return buf;
}

// Everything a launch needs, validated in order; no side effects yet.
struct Prepared {
    LoadedPolicy loaded;
    Caller caller;
    std::optional<Tenant> tenant;
    HostProbe probe;
};

// Who called, from the process credentials alone: known before any argument
// is parsed, so that every audit line, a usage refusal's too, names them.
Caller note_caller(const StartState& start, const AccountDb& db) {
    Caller caller = identify_caller(start.creds, db);
    auto& ctx = log::context();
    ctx.caller = caller.name;
    ctx.caller_uid = static_cast<long>(caller.uid);
    ctx.via = std::string(invocation_name(caller.invocation));
    return caller;
}

Result<Prepared> prepare(const StartState& start, const CommandLine& cl, const AccountDb& db, Caller caller) {
    Prepared p;
    p.caller = std::move(caller);

    auto loaded = load_policy(start.config_override.value_or(CLIHOST_JAIL_CONFIG_PATH),
                              start.config_override.has_value());
    if (!loaded) return loaded.error();
    p.loaded = std::move(loaded).value();
    if (auto st = authorize_caller(p.loaded.policy, p.caller, db); !st) return st.error();
    if (cl.user) {
        auto t = validate_tenant(p.loaded.policy, *cl.user, db);
        if (!t) return t.error();
        p.tenant = std::move(t).value();
    }
    return p;
}

int do_print(const Prepared& p, const CommandLine& cl, const StartState& start) {
    if (auto st = check_bwrap(p.loaded.policy); !st) return refuse(st.error());
    const Request req{Verb::run, *cl.session, cl.command};
    auto plan = build_plan(p.loaded.policy, *p.tenant, req, p.probe, start.caller_env, {});
    if (!plan) return refuse(plan.error());
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on
    // `"literal" + std::string&&` (GCC bug 105329), which broke Release builds.
    std::string out = "# clihost-jail plan: tenant " + p.tenant->account.name;
    out.append(", session ").append(*cl.session).append(", /proc ").append(plan.value().proc_source);
    if (plan.value().trial_in_child) out.append(" (a fresh procfs, proven before exec)");
    if (p.loaded.policy.pam_session)
        out.append(", PAM session ").append(p.loaded.policy.pam_service).append(" (its pam_env variables are added at launch)");
    else
        out.append(", no PAM session");
    out.append("\n");
    for (const auto& w : plan.value().warnings) out += "# warning: " + w + "\n";
    out += "env -i";
    for (const auto& e : plan.value().env) out.append(" ").append(shell_quote(e));
    for (const auto& a : plan.value().argv) out.append(" ").append(shell_quote(a));
    out += "\n";
    const bool written = std::fputs(out.c_str(), stdout) >= 0;
    log::audit("allow", "plan printed");
    return written && std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

int do_launch(const Prepared& p, const CommandLine& cl, const StartState& start) {
    const Policy& policy = p.loaded.policy;
    if (p.caller.invocation == Invocation::unprivileged)
        return refuse(fail(Exit::host, "not running with root privileges (install setuid root or use sudo)"));
    if (auto st = check_bwrap(policy); !st) return refuse(st.error());
    const Request req{cl.verb, *cl.session, cl.command};
    const bool default_tmux = cl.command.empty();

    // kill is a short tmux client, not a login: no PAM session, exec directly.
    if (cl.verb == Verb::kill || !policy.pam_session) {
        auto plan = build_plan(policy, *p.tenant, req, p.probe, start.caller_env, {});
        if (!plan) return refuse(plan.error());
        for (const auto& w : plan.value().warnings) log::audit("warn", w);
        log::audit("allow", "exec bwrap, /proc " + plan.value().proc_source + ", no PAM session");
        return refuse(exec_jail(plan.value(), *p.tenant, default_tmux, start.parent));
    }
    if (auto st = check_pam_service(policy); !st) return refuse(st.error());
    if (auto st = block_relayed_signals(); !st) return refuse(st.error());
    auto pam = PamSession::open(policy.pam_service, p.tenant->account.name, p.caller.name, tty_of_stdin());
    if (!pam) return refuse(pam.error());
    auto plan = build_plan(policy, *p.tenant, req, p.probe, start.caller_env, pam.value()->environment());
    if (!plan) return refuse(plan.error());  // the session closes as pam goes out of scope
    for (const auto& w : plan.value().warnings) log::audit("warn", w);
    log::audit("allow", "PAM session open, starting bwrap, /proc " + plan.value().proc_source);
    auto status = run_supervised(plan.value(), *p.tenant, default_tmux, *pam.value());
    if (!status) return refuse(status.error());
    log::audit("exit", "jail exited with status " + std::to_string(status.value()) + ", PAM session closed");
    return status.value();
}

// Runs argv as uid/gid after a full drop; returns its stdout (first line).
std::string dropped_output(uid_t uid, gid_t gid, const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return {};
    }
    if (pid == 0) {
        if (::dup2(fds[1], 1) != 1) ::_exit(127);
        if (::geteuid() == 0 && !drop_privileges(uid, gid, {gid})) ::_exit(127);
        std::vector<char*> a;
        a.reserve(argv.size() + 1);
        for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        char* no_env[] = {nullptr};
        ::execve(a[0], a.data(), no_env);
        ::_exit(127);
    }
    ::close(fds[1]);
    std::string out;
    char buf[256];
    ssize_t n;
    while (out.size() < 4096 && ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? out : std::string();
}

// A real jail running /bin/true as the tenant, without a PAM session.
bool trial_jail(const Prepared& p) {
    const Request req{Verb::run, "check", {"/bin/true"}};
    Policy policy = p.loaded.policy;
    policy.allow_caller_command = true;  // our own fixed command, not the caller's
    auto plan = build_plan(policy, *p.tenant, req, p.probe, {}, {});
    if (!plan) return false;
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
        const Error e = exec_jail(plan.value(), *p.tenant, false, self);
        (void)std::fprintf(stderr, "clihost-jail: trial: %s\n", e.message.c_str());
        ::_exit(static_cast<int>(e.code));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int do_check(const Prepared& p, const StartState& start) {
    const Policy& policy = p.loaded.policy;
    std::string r;
    bool can_start = true;
    auto line = [&](const std::string& k, const std::string& v) { r += k + ": " + v + "\n"; };
    auto problem = [&](const std::string& k, const std::string& v) {
        line(k, "FAIL: " + v);
        can_start = false;
    };
    line("clihost-jail", CLIHOST_JAIL_VERSION);
    line("invocation", std::string(invocation_name(p.caller.invocation)) + " (caller " + p.caller.name + ", uid " +
                           std::to_string(p.caller.uid) + ")");
    if (p.caller.invocation == Invocation::unprivileged) problem("privileges", "effective uid is not 0");
    line("config", p.loaded.path + (p.loaded.from_file ? ": ok (root-owned, not writable by group/others)"
                                                       : ": absent, built-in defaults"));
    if (auto st = check_bwrap(policy); !st) {
        problem("bwrap", st.error().message);
    } else {
        const uid_t uid = p.tenant ? p.tenant->account.uid : kNobody;
        const gid_t gid = p.tenant ? p.tenant->account.gid : kNobody;
        const auto version = dropped_output(uid, gid, {policy.bwrap, "--version"});
        // A bwrap that cannot even print its version as an unprivileged user
        // will not start a jail either.
        if (version.empty()) problem("bwrap", policy.bwrap + " --version failed when run unprivileged");
        else line("bwrap", policy.bwrap + ": ok (root-owned, not writable by group/others), " + version);
    }
    line("user namespaces", p.probe.user_namespaces ? "yes" : "no (" + p.probe.trial_detail + ")");
    line("fresh procfs", p.probe.fresh_proc ? "yes" : "no (" + p.probe.trial_detail + ")");
    line("host /proc hidepid=invisible", p.probe.host_proc_hidepid ? "yes" : "no");
    line("proc mode", std::string(proc_mode_name(policy.proc)));
    if (!policy.pam_session) line("pam", "no session");
    else if (auto st = check_pam_service(policy); !st) problem("pam", st.error().message);
    else line("pam", "session via /etc/pam.d/" + policy.pam_service);
    if (p.tenant) {
        line("tenant", p.tenant->account.name + ": ok (uid " + std::to_string(p.tenant->account.uid) + ", home " +
                           p.tenant->account.home + ")");
        // run would refuse an expired tenant in pam_acct_mgmt: so does check.
        if (policy.pam_session && can_start) {
            if (auto st = PamSession::check_account(policy.pam_service, p.tenant->account.name, p.caller.name); !st)
                problem("pam account", st.error().message);
            else line("pam account", "ok (" + policy.pam_service + " account checks pass)");
        }
        auto plan = build_plan(policy, *p.tenant, Request{Verb::run, "check", {}}, p.probe, start.caller_env, {});
        if (!plan) problem("plan", plan.error().message);
        else if (can_start && !trial_jail(p)) problem("jail trial", "bwrap could not start /bin/true in the jail");
        else if (can_start) line("jail trial", "ok (/bin/true ran in the jail as " + p.tenant->account.name + ")");
    } else {
        if (!p.probe.user_namespaces) problem("namespaces", "a jail needs unprivileged user namespaces");
        if (policy.proc == ProcMode::private_only && !p.probe.fresh_proc)
            problem("proc", "proc = private but a fresh procfs cannot be mounted");
        if (policy.proc == ProcMode::private_or_hidepid && !p.probe.fresh_proc && !p.probe.host_proc_hidepid)
            problem("proc", "no fresh procfs and host /proc lacks hidepid=invisible");
    }
    if (const auto sink = probe_audit_sink(); sink.ok) line("audit log", sink.detail); else problem("audit log", sink.detail);
    line("result", can_start ? "a jail can start" : "a jail cannot start");
    // The exit status is the answer; the report is for a human.
    (void)std::fputs(r.c_str(), stdout);
    (void)std::fflush(stdout);
    log::audit(can_start ? "allow" : "fail", can_start ? "check passed" : "check found problems");
    return can_start ? 0 : static_cast<int>(Exit::host);
}

}  // namespace

int dispatch(const StartState& start, const std::vector<std::string>& args) {
    SystemAccountDb db;
    Caller caller = note_caller(start, db);
    auto parsed = parse_command_line(args);
    if (!parsed) return refuse(parsed.error());
    const CommandLine& cl = parsed.value();
    if (cl.verb == Verb::version) {
        std::printf("clihost-jail %s\n", CLIHOST_JAIL_VERSION);
        return 0;
    }
    if (cl.verb == Verb::help) {
        (void)std::fputs(usage_text().data(), stdout);
        return 0;
    }
    auto& ctx = log::context();
    ctx.action = verb_name(cl.verb);
    if (cl.user) ctx.tenant = *cl.user;
    if (cl.session) ctx.session = *cl.session;

    auto prepared = prepare(start, cl, db, std::move(caller));
    if (!prepared) return refuse(prepared.error());
    Prepared& p = prepared.value();
    const uid_t probe_uid = p.tenant ? p.tenant->account.uid : kNobody;
    const gid_t probe_gid = p.tenant ? p.tenant->account.gid : kNobody;
    // proc = private needs no host trial to plan a run/kill/print: the jail
    // child runs it right before exec (exit 3 if it fails). check always
    // runs it here, and the other modes need its answer to plan.
    const bool run_trial = cl.verb == Verb::check || p.loaded.policy.proc != ProcMode::private_only;
    p.probe = probe_host(p.loaded.policy.ro_bind, probe_uid, probe_gid, run_trial);

    switch (cl.verb) {
        case Verb::print: return do_print(p, cl, start);
        case Verb::check: return do_check(p, start);
        case Verb::run:
        case Verb::kill: return do_launch(p, cl, start);
        default: return static_cast<int>(Exit::internal);
    }
}

}  // namespace clihost
