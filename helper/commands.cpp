// commands.cpp: the verbs, each a straight line of validate-then-act over the
// pieces in the other files (orchestration only).
#include "commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "audit_sink.hpp"
#include "cli.hpp"
#include "config_file.hpp"
#include "launch.hpp"
#include "log.hpp"
#include "nested_check.hpp"
#include "pam_session.hpp"
#include "plan.hpp"
#include "probe.hpp"
#include "proc_decision.hpp"
#include "routes.hpp"
#include "session.hpp"
#include "trusted_path.hpp"
#include "version.hpp"

namespace clihost {
namespace {

// Who runs probes and `check`'s trials when no tenant is named.
const TenantCreds kNobody{65534, 65534, {65534}};

int refuse(const Error& e) {
    log::refuse(e.code == Exit::refused || e.code == Exit::usage ? "deny" : "fail", e.message);
    return static_cast<int>(e.code);
}

std::string verb_name(Verb v) {
    switch (v) {
        case Verb::run: return "run";
        case Verb::kill: return "kill";
        case Verb::stop: return "stop";
        case Verb::list: return "list";
        case Verb::check: return "check";
        case Verb::print: return "print";
        case Verb::version: return "version";
        case Verb::help: return "help";
    }
    return "?";
}

std::string tty_of_stdin() {
    char buf[256];
    if (::isatty(0) != 1 || ::ttyname_r(0, buf, sizeof buf) != 0) return {};
    return buf;
}

// Everything a verb needs, validated in order; no side effects yet.
struct Prepared {
    LoadedPolicy loaded;
    Caller caller;
    std::optional<Tenant> tenant;
    HostProbe probe;
    const Policy& policy() const { return loaded.policy; }
    TenantCreds probe_creds() const { return tenant ? creds_of(*tenant) : kNobody; }
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
    // stop and list name a tenant who may no longer qualify (disabled,
    // removed from the group): they look it up themselves.
    if (cl.user && cl.verb != Verb::stop && cl.verb != Verb::list) {
        auto t = validate_tenant(p.loaded.policy, *cl.user, db);
        if (!t) return t.error();
        p.tenant = std::move(t).value();
    }
    return p;
}

Status require_root(const Prepared& p) {
    if (p.caller.invocation == Invocation::unprivileged)
        return fail(Exit::host, "not running with root privileges (install setuid root or use sudo)");
    return ok_status();
}

Result<Plan> plan_for(const Prepared& p, const StartState& start, Request req,
                      const std::vector<std::string>& pam_env = {}) {
    auto plan = build_plan(p.policy(), *p.tenant, req, p.probe, start.caller_env, pam_env);
    if (plan)
        for (const auto& w : plan.value().warnings) log::audit("warn", w);
    return plan;
}

// The uid of a tenant named for stop/list: a passwd entry in the tenant uid
// range, or, for an account already deleted, the name a live record keeps.
Result<uid_t> tenant_uid(const Policy& policy, const std::string& name, const AccountDb& db) {
    if (auto a = db.user_by_name(name)) {
        if (a->uid == 0 || a->uid < policy.min_uid || a->uid > policy.max_uid)
            return fail(Exit::refused, "tenant " + name + " refused: uid outside the tenant range");
        return a->uid;
    }
    for (const auto& r : live_session_jails())
        if (r.tenant == name) return r.uid;
    return fail(Exit::refused, "tenant " + name + " refused: no such user");
}

std::string render(const Plan& plan) {
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on
    // `"literal" + std::string&&` (GCC bug 105329).
    std::string out = "env -i";
    for (const auto& e : plan.env) out.append(" ").append(shell_quote(e));
    for (const auto& a : plan.argv) out.append(" ").append(shell_quote(a));
    return out.append("\n");
}

int do_print(const Prepared& p, const CommandLine& cl, const StartState& start) {
    if (auto st = check_trusted_executable("bwrap", p.policy().bwrap); !st) return refuse(st.error());
    if (auto st = routes::check_jail_shell(p.policy()); !st) return refuse(st.error());
    // run plans two jails (the session jail, started if absent, and this
    // connection's attach jail); run -- COMMAND plans one.
    std::vector<Request> reqs;
    if (cl.command.empty()) reqs = {{JailAction::serve, "", {}}, {JailAction::attach, *cl.session, {}}};
    else reqs = {{JailAction::command, *cl.session, cl.command}};
    std::string out;
    for (const auto& req : reqs) {
        auto plan = build_plan(p.policy(), *p.tenant, req, p.probe, start.caller_env, {});
        if (!plan) return refuse(plan.error());
        const Plan& pl = plan.value();
        // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on
        // `"literal" + std::string&&` (GCC bug 105329), which broke Release builds.
        out.append("# clihost-jail plan: ").append(jail_action_name(req.action)).append(" jail, tenant ");
        out.append(p.tenant->account.name).append(", session ").append(*cl.session);
        out.append(", /proc ").append(pl.proc_source);
        if (pl.trial_in_child) out.append(" (a fresh procfs, proven before exec)");
        if (!p.policy().pam_session) out.append(", no PAM session");
        else if (req.action == JailAction::attach) out.append(", PAM account check ").append(p.policy().pam_service);
        else out.append(", PAM session ").append(p.policy().pam_service).append(" (its pam_env variables are added at launch)");
        out.append(", nested sandbox ").append(pl.nested_sandbox ? "allowed" : "not allowed").append("\n");
        for (const auto& w : pl.warnings) out.append("# warning: ").append(w).append("\n");
        out += render(pl);
    }
    const bool written = std::fputs(out.c_str(), stdout) >= 0;
    log::audit("allow", "plan printed");
    return written && std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

// run without a command: find or start the tenant's session jail, then
// become this connection's attach jail.
int do_attach(const Prepared& p, const CommandLine& cl, const StartState& start) {
    const Policy& policy = p.policy();
    if (auto st = require_root(p); !st) return refuse(st.error());
    if (auto st = check_trusted_executable("bwrap", policy.bwrap); !st) return refuse(st.error());
    if (auto st = routes::check_jail_shell(policy); !st) return refuse(st.error());
    if (policy.pam_session) {
        if (auto st = check_pam_service(policy.pam_service); !st) return refuse(st.error());
        // Every attach: an expired tenant cannot attach to a session jail
        // that is still running (stop ends it).
        if (auto st = PamSession::check_account(policy.pam_service, p.tenant->account.name, p.caller.name); !st)
            return refuse(st.error());
    }
    auto attach = plan_for(p, start, {JailAction::attach, *cl.session, {}});
    if (!attach) return refuse(attach.error());
    auto jail = ensure_session_jail({policy, *p.tenant, p.probe, start.caller_env, p.caller.name});
    if (!jail) return refuse(jail.error());
    log::audit("allow", "attach to the session jail of supervisor " + std::to_string(jail.value().pid));
    exec_jail(attach.value(), start.parent);
}

// run -- COMMAND: a one-off jail of its own, never the session jail.
int do_command(const Prepared& p, const CommandLine& cl, const StartState& start) {
    const Policy& policy = p.policy();
    if (auto st = require_root(p); !st) return refuse(st.error());
    if (auto st = check_trusted_executable("bwrap", policy.bwrap); !st) return refuse(st.error());
    if (auto st = routes::check_jail_shell(policy); !st) return refuse(st.error());
    const Request req{JailAction::command, *cl.session, cl.command};
    if (!policy.pam_session) {
        auto plan = plan_for(p, start, req);
        if (!plan) return refuse(plan.error());
        log::audit("allow", "exec bwrap, /proc " + plan.value().proc_source + ", no PAM session");
        exec_jail(plan.value(), start.parent);
    }
    if (auto st = check_pam_service(policy.pam_service); !st) return refuse(st.error());
    if (auto st = block_relayed_signals(); !st) return refuse(st.error());
    auto pam = PamSession::open(policy.pam_service, p.tenant->account.name, p.caller.name, tty_of_stdin());
    if (!pam) return refuse(pam.error());
    auto plan = plan_for(p, start, req, pam.value()->environment());
    if (!plan) return refuse(plan.error());  // the session closes as pam goes out of scope
    log::audit("allow", "PAM session open, starting bwrap, /proc " + plan.value().proc_source);
    auto status = run_supervised(plan.value(), *pam.value());
    if (!status) return refuse(status.error());
    log::audit("exit", "jail exited with status " + std::to_string(status.value()) + ", PAM session closed");
    return status.value();
}

// kill: a client jail ends one tmux session of the running session jail;
// tmux then ends the session jail with its last session (exit-empty).
int do_kill(const Prepared& p, const CommandLine& cl, const StartState& start) {
    if (auto st = require_root(p); !st) return refuse(st.error());
    if (auto st = check_trusted_executable("bwrap", p.policy().bwrap); !st) return refuse(st.error());
    if (!find_session_jail(p.tenant->account.uid))
        return refuse(fail(Exit::refused, "tenant " + p.tenant->account.name + " has no session jail"));
    auto plan = plan_for(p, start, {JailAction::kill_session, *cl.session, {}});
    if (!plan) return refuse(plan.error());
    log::audit("allow", "exec bwrap (kill-session)");
    exec_jail(plan.value(), start.parent);
}

int do_stop(const Prepared& p, const CommandLine& cl, const AccountDb& db) {
    if (auto st = require_root(p); !st) return refuse(st.error());
    auto uid = tenant_uid(p.policy(), *cl.user, db);
    if (!uid) return refuse(uid.error());
    auto stopped = stop_session_jail(uid.value());
    if (!stopped) return refuse(stopped.error());
    const std::string what = stopped.value() ? "session jail stopped" : "no session jail was running";
    log::audit("allow", what);
    std::printf("%s: %s\n", cl.user->c_str(), what.c_str());
    return std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

std::string iso_time(long long t) {
    char buf[32];
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    if (::gmtime_r(&tt, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return "-";
    return buf;
}

// list: one line per live session jail, for a proxy to parse:
// tenant=NAME uid=UID supervisor=PID started=ISO8601 sessions=a,b,c
// (sessions=- when they cannot be listed, e.g. the tenant is disabled).
int do_list(const Prepared& p, const CommandLine& cl, const StartState& start, const AccountDb& db) {
    if (auto st = require_root(p); !st) return refuse(st.error());
    std::optional<uid_t> only;
    if (cl.user) {
        auto uid = tenant_uid(p.policy(), *cl.user, db);
        if (!uid) return refuse(uid.error());
        only = uid.value();
    }
    std::string out;
    for (const auto& r : live_session_jails()) {
        if (only && r.uid != *only) continue;
        std::string sessions = "-";
        auto tenant = validate_tenant(p.policy(), r.tenant, db);
        if (tenant && tenant.value().account.uid == r.uid) {
            auto plan = build_plan(p.policy(), tenant.value(), {JailAction::list_sessions, "", {}}, p.probe,
                                   start.caller_env, {});
            if (plan) {
                auto got = capture_jail(plan.value(), 64 * 1024);
                if (got.status == 0) {
                    sessions.clear();
                    for (char c : got.out) sessions += c == '\n' ? ',' : c;
                    while (!sessions.empty() && sessions.back() == ',') sessions.pop_back();
                }
            }
        }
        out += "tenant=" + r.tenant + " uid=" + std::to_string(r.uid) + " supervisor=" + std::to_string(r.pid) +
               " started=" + iso_time(r.started) + " sessions=" + (sessions.empty() ? "-" : sessions) + "\n";
    }
    const bool written = std::fputs(out.c_str(), stdout) >= 0;
    log::audit("allow", "listed session jails");
    return written && std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

// A real jail running command (our own, fixed) as the tenant, without a PAM session.
bool trial_jail(const Prepared& p, const std::vector<std::string>& command) {
    Policy policy = p.policy();
    policy.allow_caller_command = true;  // our own fixed command, not the caller's
    auto plan = build_plan(policy, *p.tenant, {JailAction::command, "check", command}, p.probe, {}, {});
    return plan && capture_jail(plan.value(), 0).status == 0;
}

int do_check(const Prepared& p, const StartState& start) {
    const Policy& policy = p.policy();
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
    if (auto st = check_trusted_executable("bwrap", policy.bwrap); !st) {
        problem("bwrap", st.error().message);
    } else {
        const auto version = dropped_output(p.probe_creds(), {policy.bwrap, "--version"});
        // A bwrap that cannot even print its version as an unprivileged user
        // will not start a jail either.
        if (version.empty()) problem("bwrap", policy.bwrap + " --version failed when run unprivileged");
        else line("bwrap", policy.bwrap + ": ok (root-owned, not writable by group/others), " + version);
    }
    line("user namespaces", p.probe.user_namespaces ? "yes" : "no (" + p.probe.trial_detail + ")");
    line("fresh procfs", p.probe.fresh_proc ? "yes" : "no (" + p.probe.trial_detail + ")");
    line("host /proc hidepid=invisible", p.probe.host_proc_hidepid ? "yes" : "no");
    line("proc mode", std::string(proc_mode_name(policy.proc)));
    line("nested sandbox", nested_sandbox_summary(policy));
    if (!policy.pam_session) line("pam", "no session");
    else if (auto st = check_pam_service(policy.pam_service); !st) problem("pam", st.error().message);
    else line("pam", "session via /etc/pam.d/" + policy.pam_service);
    if (auto dir = RuntimeDir::open(); !dir) problem("runtime state", dir.error().message);
    else line("runtime state", std::string(CLIHOST_JAIL_RUNTIME_DIR) + ": ok (root-owned, mode 0700)");
    if (p.tenant) {
        line("tenant", p.tenant->account.name + ": ok (uid " + std::to_string(p.tenant->account.uid) + ", home " +
                           p.tenant->account.home + ")");
        // run would refuse an expired tenant in pam_acct_mgmt: so does check.
        if (policy.pam_session && can_start) {
            if (auto st = PamSession::check_account(policy.pam_service, p.tenant->account.name, p.caller.name); !st)
                problem("pam account", st.error().message);
            else line("pam account", "ok (" + policy.pam_service + " account checks pass)");
        }
        const auto jail = find_session_jail(p.tenant->account.uid);
        line("session jail", jail ? "running (supervisor " + std::to_string(jail->pid) + ")" : "not running");
        auto plan = build_plan(policy, *p.tenant, {JailAction::serve, "", {}}, p.probe, start.caller_env, {});
        if (!plan) problem("plan", plan.error().message);
        else if (can_start && !trial_jail(p, {"/bin/true"}))
            problem("jail trial", "bwrap could not start /bin/true in the jail");
        else if (can_start) line("jail trial", "ok (/bin/true ran in the jail as " + p.tenant->account.name + ")");
        if (can_start && policy.nested_sandbox && !trial_jail(p, nested_trial_command(policy)))
            problem("nested sandbox trial", "an inner bwrap could not run /bin/true in the jail");
        else if (can_start && policy.nested_sandbox)
            line("nested sandbox trial", "ok (an inner bwrap ran /bin/true in its own namespaces in the jail)");
    } else if (auto proc = decide_proc(policy.proc, p.probe); !proc) {
        problem("proc", proc.error().message);
    } else {
        line("proc", "ok (" + proc.value().source() + ")");
    }
    // An open route around the jail fails check too (routes.hpp).
    const bool closed = routes::report_for_check(policy, p.tenant ? &p.tenant->account : nullptr, r);
    if (const auto sink = probe_audit_sink(); sink.ok) line("audit log", sink.detail); else problem("audit log", sink.detail);
    line("result", can_start ? "a jail can start" : "a jail cannot start");
    // The exit status is the answer; the report is for a human.
    (void)std::fputs(r.c_str(), stdout);
    (void)std::fflush(stdout);
    const bool passed = can_start && closed;
    log::audit(passed ? "allow" : "fail", passed ? "check passed" : "check found problems");
    return passed ? 0 : static_cast<int>(Exit::host);
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
    // proc = private needs no host trial to plan a jail: the jail's first
    // tenant process runs it right before exec (exit 3 if it fails). check
    // always runs it here, and the other modes need its answer to plan.
    const bool run_trial = cl.verb == Verb::check || proc_needs_host_trial(p.policy().proc);
    const TenantCreds who = p.probe_creds();
    p.probe = probe_host(p.policy().ro_bind, who.uid, who.gid, run_trial);

    switch (cl.verb) {
        case Verb::print: return do_print(p, cl, start);
        case Verb::check: return do_check(p, start);
        case Verb::run: return cl.command.empty() ? do_attach(p, cl, start) : do_command(p, cl, start);
        case Verb::kill: return do_kill(p, cl, start);
        case Verb::stop: return do_stop(p, cl, db);
        case Verb::list: return do_list(p, cl, start, db);
        default: return static_cast<int>(Exit::internal);
    }
}

}  // namespace clihost
