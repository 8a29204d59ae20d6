// commands.cpp: the verbs, each a straight line of validate-then-act over the
// pieces in the other files (orchestration only).
// Size: one straight line per verb, a screen each; the owner model moves
// the attach and one-off paths to the supervisor and the front.
#include "verbs/commands.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>
#include <optional>

#include "verbs/check.hpp"
#include "host/placement.hpp"
#include "decide/cli.hpp"
#include "decide/request.hpp"
#include "host/config_file.hpp"
#include "host/container_check.hpp"
#include "base/fault.hpp"
#include "proc/front.hpp"
#include "base/log.hpp"
#include "base/validate.hpp"
#include "decide/plan.hpp"
#include "proc/probe.hpp"
#include "decide/proc_decision.hpp"
#include "host/routes.hpp"
#include "host/runtime_state.hpp"
#include "proc/starter.hpp"
#include "decide/tenant_output.hpp"
#include "host/trusted_path.hpp"
#include "base/unique_fd.hpp"
#include "version.hpp"
#include "host/accounts.hpp"

namespace clihost {
namespace {

// Who runs probes and `check`'s trials when no tenant is named.

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

Result<Prepared> prepare(const StartState& start, const AccountDb& db, Caller caller) {
    Prepared p;
    p.caller = std::move(caller);

    auto loaded = load_policy(start.config_override.value_or(CLIHOST_JAIL_CONFIG_PATH),
                              start.config_override.has_value());
    if (!loaded) return loaded.error();
    p.loaded = std::move(loaded).value();
    if (auto st = authorize_caller(p.loaded.policy, p.caller, db); !st) return st.error();
    return p;
}

// A refused attach exits only after the tenant's refusal delay (1 s,
// doubling per refusal up to refusal_delay_max, reset by a success), as
// login and sshd delay a failed login: ttyd's page reconnects at once
// whenever its connection ends, and a tenant whose account expired made
// 29 setuid runs, PAM checks and 58 audit lines in 4 s. The record is kept
// (before the wait, so that killing this process does not reset it) in the
// root-owned runtime directory, by uid; a name with no account waits 1 s.
void refusal_backoff(const Policy& policy, const std::string& tenant, const AccountDb& db) {
    if (policy.refusal_delay_max == 0 || ::geteuid() != 0) return;
    unsigned delay = 1;
    if (const auto a = db.user_by_name(tenant)) {
        if (auto dir = RuntimeDir::open()) {
            const auto d = refusal_delay(dir.value().read_refusals(a->uid), std::time(nullptr),
                                         policy.refusal_delay_max);
            dir.value().write_refusals(a->uid, d.next);
            delay = d.delay;
        }
    }
    unsigned left = delay;
    while (left > 0) left = ::sleep(left);
}

Status require_root(const Prepared& p) {
    if (p.caller.invocation == Invocation::unprivileged)
        return fail(Exit::host, not_root_message(read_container_facts()));
    return ok_status();
}

// What each verb needs of the host, checked in one place (require_all)
// before its body, in this order. `check` reports these itself (its
// sections), print, version and help need nothing of root. list, kill and
// stop start no jail of their own: kill and list ask the tenant's running
// supervisor, which starts their query jails.
struct Requirements {
    bool root{false};        // a setuid or root run (require_root)
    bool bwrap{false};       // the configured bwrap is a trusted executable
    bool jail_shell{false};  // the jail's shell is no route around it (routes::check_jail_shell)
    enum class ProcSys { no, yes, unless_nested } proc_sys{ProcSys::no};  // require_proc_sys_writable
    bool attach_stub{false};  // the attach stub an attach jail or a one-off jail runs is trusted (kAttachStub)
};

Requirements requirements_of(Verb verb, bool attach) {
    using P = Requirements::ProcSys;
    switch (verb) {
        case Verb::print: return {false, true, true, P::no};
        case Verb::run: return {true, true, true, attach ? P::yes : P::unless_nested, true};
        case Verb::kill:
        case Verb::stop:
        case Verb::list: return {true, false, false, P::no};
        case Verb::check:
        case Verb::version:
        case Verb::help: break;
    }
    return {};
}

Status require_all(const Requirements& r, const Prepared& p) {
    const Policy& policy = p.policy();
    if (r.root)
        if (auto st = require_root(p); !st) return st;
    if (r.bwrap)
        if (auto st = check_trusted_executable("bwrap", policy.bwrap); !st) return st;
    if (r.jail_shell)
        if (auto st = routes::check_jail_shell(policy); !st) return st;
    if (r.attach_stub)
        if (auto st = check_tenant_executable("the attach stub", std::string(kAttachStub)); !st) return st;
    if (r.proc_sys != Requirements::ProcSys::no)
        return require_proc_sys_writable(r.proc_sys == Requirements::ProcSys::yes || !policy.nested_sandbox);
    return ok_status();
}

// The uid of a tenant named for stop/list: a tenant (validate_tenant), or
// the owner of a live session jail, by its account's uid or, for an account
// already deleted, by the name its record keeps (a removed or disabled
// tenant's jail can still be stopped). Anyone else is refused, before any
// lock file is made for them.
Result<uid_t> tenant_uid(const Policy& policy, const std::string& name, const AccountDb& db) {
    const auto a = db.user_by_name(name);
    if (a) {
        auto t = validate_tenant(policy, name, db, inspect_home);
        if (t && t.value().account.uid == a->uid) return a->uid;
    }
    for (const auto& r : live_session_jails())
        if (a ? r.uid == a->uid : r.tenant == name) return r.uid;
    if (!a) return fail(Exit::refused, "tenant " + name + " refused: no such user");
    return fail(Exit::refused, "tenant " + name + " refused: not a tenant, and no session jail of its runs");
}

// The request a front hands over: what to start, and who asks (for the
// supervisor's audit lines). Only well-formed extra_env candidates travel.
HandoverRequest handover_request(const Prepared& p, const CommandLine& cl, const StartState& start) {
    HandoverRequest r;
    r.kind = cl.command.empty() ? HandoverKind::attach : HandoverKind::command;
    r.session = *cl.session;
    r.command = cl.command;
    for (const auto& [name, value] : start.caller_env)
        if (r.extra_env.size() < kMaxRequestEnv && is_well_formed_env_value(value)) r.extra_env.emplace(name, value);
    r.caller = p.caller.name;
    r.caller_uid = static_cast<long>(p.caller.uid);
    r.via = log::context().via;
    r.sudo_uid = start.creds.sudo_uid.value_or("-");
    return r;
}

// A query (list, kill) for the supervisors: who asks, for their audit lines.
HandoverRequest query_request(const Prepared& p, const StartState& start, HandoverKind kind) {
    HandoverRequest r;
    r.kind = kind;
    r.caller = p.caller.name;
    r.caller_uid = static_cast<long>(p.caller.uid);
    r.via = log::context().via;
    r.sudo_uid = start.creds.sudo_uid.value_or("-");
    return r;
}

// What the supervisor program is started with (starter.hpp): the tenant,
// who asks, the file the front checked (its digest), the caller's
// extra_env candidates; the supervisor reads and checks them all again.
SupervisorArgs start_args(const Prepared& p, const StartState& start, const HandoverRequest& req) {
    SupervisorArgs a;
    a.tenant = p.tenant->account.name;
    a.uid = p.tenant->account.uid;
    a.caller = p.caller.name;
    a.caller_uid = static_cast<long>(p.caller.uid);
    a.via = log::context().via;
    a.session = req.session;
    a.session_jail = req.kind == HandoverKind::attach;
    a.config = start.config_override;
    a.config_digest = p.loaded.digest;
    a.caller_env = req.extra_env;
    a.faults = fault::armed();
    return a;
}

// The front: hand the request to the tenant's supervisor (started if T has
// none), relay, return the jail's status. A supervisor that was ending as
// the request arrived (a typed outcome: retry) is waited for, and a new one
// started, once, after the same checks.
int hand_to_supervisor(const Prepared& p, const StartState& start, const AccountDb& db, const HandoverRequest& req) {
    const bool attach = req.kind == HandoverKind::attach;
    if (auto st = hold_front_signals(); !st) return refuse(st.error());
    const SupervisorArgs args = start_args(p, start, req);
    for (int attempt = 0;; ++attempt) {
        auto jail = ensure_session_jail(args);
        if (!jail) return refuse(jail.error());
        if (!speaks_our_protocol(jail.value()))
            return refuse(fail(Exit::host, "the session jail of " + p.tenant->account.name + " (supervisor " +
                                               std::to_string(jail.value().pid) + ") is of another version (record v" +
                                               std::to_string(jail.value().version) +
                                               "): end it with clihost-jail stop --user " + p.tenant->account.name));
        // A step, not a decision: the supervisor's line says what came of it.
        log::audit("note", "handing over to the supervisor " + std::to_string(jail.value().pid));
        auto out = hand_over(jail.value(), req);
        if (!out) return refuse(out.error());
        // The supervisor refused, and wrote the one audit line of it.
        if (out.value().kind == Handover::Kind::refused) {
            log::say(out.value().why.message);
            return static_cast<int>(out.value().why.code);
        }
        // An attach's status is what its watcher made of the tenant's tmux
        // client (0, kClientFailedStatus, 128 + N: README, "Exit codes").
        if (out.value().kind == Handover::Kind::done)
            return attach ? attach_watcher_status(out.value().status, kNoServerStatus) : out.value().status;
        if (attempt > 0)
            return refuse(fail(Exit::host, "the supervisor " + std::to_string(jail.value().pid) +
                                               " could not take this connection twice"));
        // The supervisor ends (none of its jails left), or, while one-off
        // jails keep it, its session jail has ended and the next handover
        // starts a new one there.
        const bool ended = session_jail_ended(jail.value(), 5000);
        log::audit("warn", std::string("the session jail ended as this connection arrived; attaching to a new one") +
                               (ended ? "" : " (its supervisor runs on: one-off jails keep it)"));
        // A second attempt's tenant is the one prepare() found, looked up
        // again (PAM's account check is the supervisor's, for every
        // connection: owner.hpp, OwnerContext::check_account).
        if (auto st = tenant_unchanged(p.policy(), *p.tenant, db, inspect_home); !st) return refuse(st.error());
    }
}

// run without a command: the checks, then the front; the supervisor makes
// PAM's account check before it starts anything.
int do_attach(const Prepared& p, const CommandLine& cl, const StartState& start, const AccountDb& db) {
    const Policy& policy = p.policy();
    // What the policy refuses, refused before a supervisor's start.
    if (auto st = validate_request(policy, p.tenant->account, {JailAction::attach, *cl.session, {}}, p.probe); !st)
        return refuse(st.error());
    // Its stdio checked before a supervisor's start: a refused attach
    // starts no PAM session, no network, no tmux.
    if (auto st = check_caller_stdio(HandoverKind::attach); !st) return refuse(st.error());
    if (fault::fail("slow_handover")) ::sleep(2);  // tests: a window before the handover
    return hand_to_supervisor(p, start, db, handover_request(p, cl, start));
}

// run -- COMMAND: a one-off jail, never the session jail, started by the
// tenant's supervisor (a supervisor started for it starts no session jail):
// the checks, then the front, as for an attach.
int do_command(const Prepared& p, const CommandLine& cl, const StartState& start, const AccountDb& db) {
    const Policy& policy = p.policy();
    // What the policy refuses (a caller's command it does not allow, say),
    // refused before a supervisor's start.
    if (auto st = validate_request(policy, p.tenant->account, {JailAction::command, *cl.session, cl.command}, p.probe);
        !st)
        return refuse(st.error());
    if (auto st = check_caller_stdio(HandoverKind::command); !st) return refuse(st.error());
    if (fault::fail("slow_handover")) ::sleep(2);  // tests: a window before the handover
    return hand_to_supervisor(p, start, db, handover_request(p, cl, start));
}

// kill: the tenant's supervisor ends one tmux session of its session jail
// (by a query jail of its own); tmux then ends the session jail with its
// last session (exit-empty).
int do_kill(const Prepared& p, const CommandLine& cl, const StartState& start) {
    const std::string& name = p.tenant->account.name;
    const auto jail = find_session_jail(p.tenant->account.uid);
    if (!jail) return refuse(fail(Exit::refused, "tenant " + name + " has no session jail"));
    if (!speaks_our_protocol(*jail))
        return refuse(fail(Exit::host, "the session jail of " + name + " (supervisor " + std::to_string(jail->pid) +
                                           ") is of another version (record v" + std::to_string(jail->version) +
                                           "): end it with clihost-jail stop --user " + name));
    HandoverRequest req = query_request(p, start, HandoverKind::kill);
    req.session = *cl.session;
    auto got = std::move(ask_supervisors({*jail}, req).front());
    if (!got) return refuse(got.error());
    // What tmux said ("can't find session") is the tenant's: it reaches the
    // caller only escaped, inside the helper's own one line, and any status
    // but 0 is the helper's refusal (1).
    const QueryAnswer& a = got.value();
    const std::string who = "session " + *cl.session + " of tenant " + name;
    switch (a.kind) {
        case QueryAnswer::Kind::no_session_jail: return refuse(fail(Exit::refused, "tenant " + name + " has no session jail"));
        case QueryAnswer::Kind::no_answer:
            return refuse(fail(Exit::refused, who + " not killed: its tmux did not answer within " +
                                                  std::to_string(kTenantQueryDeadlineMs / 1000) + " s"));
        case QueryAnswer::Kind::not_killed:
            return refuse(fail(Exit::refused, who + " not killed" + (a.said.empty() ? "" : ": tmux said: " + a.said)));
        case QueryAnswer::Kind::sessions: break;
    }
    // No session left: the session jail is ending (exit-empty). Return once
    // it is gone, so that the caller's next `run` starts a new one rather
    // than find the old one's record while it ends.
    if (a.sessions.empty() && !session_jail_ended(*jail, 5000))
        log::audit("warn", "the session jail's last session was killed but it has not ended within 5 s");
    return 0;
}

int do_stop(const Prepared& p, const CommandLine& cl, const StartState& start, const AccountDb& db) {
    auto uid = tenant_uid(p.policy(), *cl.user, db);
    if (!uid) return refuse(uid.error());
    SupervisorArgs args;
    args.mode = SupervisorMode::stop;
    args.uid = uid.value();
    args.caller = p.caller.name;
    args.caller_uid = static_cast<long>(p.caller.uid);
    args.via = log::context().via;
    args.config = start.config_override;
    args.faults = fault::armed();
    auto stopped = stop_session_jail(args);
    if (!stopped) return refuse(stopped.error());
    // Its audit line is the stop mode's (session.cpp:supervisor_stop).
    std::printf("%s: %s\n", cl.user->c_str(), stopped_text(stopped.value()).c_str());
    return std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

// list: one line (or JSON object, --json) per live session jail, for a
// proxy to parse (render_list_text, render_list_json). Every tenant's tmux
// is asked at once, each within the deadline: one that does not answer is
// `sessions=?` and delays nobody else. Nothing a tenant says reaches the
// output but its session names, escaped (caller_session_name). changed=:
// the settings the jail runs with that differ from the config file now
// (a running jail keeps them until `stop`). memory=, tasks=: the usage of
// all the tenant's jails, from its cgroup (`-`/null: none on this host);
// JSON adds memory_anon and memory_file (cgroup.hpp, CgroupUsage).
int do_list(const Prepared& p, const CommandLine& cl, const StartState& start, const AccountDb& db) {
    std::optional<uid_t> only;
    if (cl.user) {
        auto uid = tenant_uid(p.policy(), *cl.user, db);
        if (!uid) return refuse(uid.error());
        only = uid.value();
    }
    std::vector<ListEntry> entries;
    std::vector<SupervisorRecord> asked;
    std::vector<std::size_t> owner;  // asked[i] answers for entries[owner[i]]
    const auto dir = RuntimeDir::open();
    for (const auto& r : live_session_jails()) {
        if (only && r.uid != *only) continue;
        ListEntry e;
        e.tenant = r.tenant;
        e.uid = r.uid;
        e.supervisor = r.pid;
        e.started = r.started;
        e.earlier_version = r.version < kRecordVersion;
        e.state = SessionsState::not_queried;
        auto tenant = validate_tenant(p.policy(), r.tenant, db, inspect_home);
        if (tenant && tenant.value().account.uid == r.uid) {
            // A supervisor of an earlier version speaks another protocol:
            // its sessions are unknown, it is not asked. One that runs no
            // session jail (one-offs only, or ending) has no tmux to ask.
            e.state = SessionsState::no_answer;
            if (speaks_our_protocol(r) && dir && !dir.value().runs_session_jail(r)) {
                e.state = SessionsState::none;
            } else if (speaks_our_protocol(r)) {
                asked.push_back(r);
                owner.push_back(entries.size());
            }
        }
        const auto drift = settings_drift(session_jail_settings(r), p.policy());
        e.settings_recorded = drift.recorded;
        for (const auto& c : drift.changes) e.changed.push_back(c.key);
        // Usage of all the tenant's jails, from its cgroup (none: unknown).
        const auto use = open_tenant_cgroup(p.policy().limits, r.uid).usage();
        auto num = [](const std::optional<std::uint64_t>& n) -> std::optional<long long> {
            if (!n) return std::nullopt;
            return static_cast<long long>(*n);
        };
        // The text form keeps the fields proxies parse; the JSON form adds
        // tcp_memory (the jails' socket buffers: on v1 beside memory, on v2
        // within it), net_memory (slirp4netns's), network_lost (1 once the
        // session jail's network process ended; not restarted) and the
        // memory split.
        e.figures = {{"memory", num(use.memory)}, {"tasks", num(use.tasks)}};
        e.json_figures = {{"tcp_memory", num(use.tcp_memory)},
                          {"net_memory", num(use.net_memory)},
                          {"network_lost", session_network_lost(r) ? 1 : 0},
                          {"memory_anon", num(use.memory_anon)},
                          {"memory_file", num(use.memory_file)}};
        entries.push_back(std::move(e));
    }
    // Every supervisor at once: one that does not answer is sessions=?.
    const auto got = ask_supervisors(asked, query_request(p, start, HandoverKind::list));
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!got[i] || got[i].value().kind != QueryAnswer::Kind::sessions) continue;
        ListEntry& e = entries[owner[i]];
        e.state = SessionsState::listed;
        for (const auto& n : got[i].value().sessions) e.sessions.push_back(caller_session_name(n));
    }
    std::string out;
    for (const auto& e : entries) out += cl.json ? render_list_json(e) : render_list_text(e);
    const bool written = std::fputs(out.c_str(), stdout) >= 0;
    log::audit("allow", "listed session jails");
    return written && std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

// check and print are not the setuid helper's (its code holds no
// diagnostics): root's run of them execs the admin program (its absolute
// path, the environment rebuilt from what sanitize_process kept of root's:
// the config override, the extra_env candidates); anyone else is refused.
int hand_to_admin(const StartState& start, const std::vector<std::string>& args) {
    const std::string admin = kAdminPath;
    if (start.creds.ruid != 0) {
        const Error e = fail(Exit::refused, "check and print are not run by the setuid helper: run them as root "
                                            "(" + admin + "); the proxy keeps run, kill, stop and list");
        // check's last line says what its exit status says, here too.
        if (args.size() > 1 && args[1] == "check") (void)std::printf("%s\n", check_refusal_line(e).c_str());
        return refuse(e);
    }
    if (auto st = check_trusted_executable("the admin program", admin); !st) return refuse(st.error());
    std::vector<std::string> words{"clihost-jail-admin"};
    if (args.size() > 1) words.insert(words.end(), std::next(args.begin()), args.end());
    std::vector<std::string> env;
    if (start.config_override) env.push_back("CLIHOST_JAIL_CONFIG=" + *start.config_override);
    if (const auto armed = fault::armed(); !armed.empty()) env.push_back("CLIHOST_JAIL_FAULT=" + armed);
    for (const auto& [name, value] : start.caller_env) {
        std::string pair = name;
        env.push_back(pair.append("=").append(value));
    }
    std::vector<char*> argv, envp;
    for (auto& w : words) argv.push_back(w.data());
    for (auto& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    ::execve(admin.c_str(), argv.data(), envp.data());
    return refuse(fail(Exit::host, "cannot run " + admin + ": " + std::strerror(errno)));
}

int run_verbs(const StartState& start, const std::vector<std::string>& args, const AdminVerbs* admin) {
    SystemAccountDb db;
    Caller caller = note_caller(start, db);
    auto parsed = parse_command_line(args);
    if (!parsed) {
        // check's last line says what its exit status says, on every path.
        if (args.size() > 1 && args[1] == "check") (void)std::printf("%s\n", check_refusal_line(parsed.error()).c_str());
        return refuse(parsed.error());
    }
    const CommandLine& cl = parsed.value();
    if (cl.verb == Verb::version) {
        std::printf("clihost-jail %s\n", CLIHOST_JAIL_VERSION);
        return 0;
    }
    if (cl.verb == Verb::help) {
        (void)std::fputs(usage_text().data(), stdout);
        return 0;
    }
    const bool admin_verb = cl.verb == Verb::check || cl.verb == Verb::print;
    if (admin_verb && admin == nullptr) return hand_to_admin(start, args);
    if (!admin_verb && admin != nullptr)
        return refuse(fail(Exit::usage, "clihost-jail-admin runs check and print only; run, kill, stop and list "
                                        "are clihost-jail's"));
    auto& ctx = log::context();
    ctx.action = verb_name(cl.verb);
    if (cl.user) ctx.tenant = *cl.user;
    if (cl.session) ctx.session = *cl.session;

    auto refuse_verb = [&](const Error& e) {
        if (cl.verb == Verb::check) {
            (void)std::fputs((check_refusal_line(e) + "\n").c_str(), stdout);
            (void)std::fflush(stdout);
        }
        return refuse(e);
    };
    auto prepared = prepare(start, db, std::move(caller));
    if (!prepared) return refuse_verb(prepared.error());
    Prepared& p = prepared.value();
    const bool attach = cl.verb == Verb::run && cl.command.empty();
    // stop and list name a tenant who may no longer qualify (disabled,
    // removed from the group): they look it up themselves.
    if (cl.user && cl.verb != Verb::stop && cl.verb != Verb::list) {
        auto t = validate_tenant(p.policy(), *cl.user, db, inspect_home);
        if (!t) {
            const int rc = refuse_verb(t.error());
            if (attach && t.error().code == Exit::refused) refusal_backoff(p.policy(), *cl.user, db);
            return rc;
        }
        p.tenant = std::move(t).value();
    }
    // proc = private needs no host trial to plan a jail: the jail's first
    // tenant process runs it right before exec (exit 3 if it fails). check
    // always runs it here, and the other modes need its answer to plan.
    const bool run_trial = cl.verb == Verb::check || proc_needs_host_trial(p.policy().proc);
    const TenantCreds who = p.probe_creds();
    p.probe = probe_host(p.policy().ro_bind, who.uid, who.gid, run_trial);

    // The verb's requirements (one table), before its body.
    if (auto st = require_all(requirements_of(cl.verb, attach), p); !st) {
        const int rc = refuse_verb(st.error());
        if (attach && st.error().code == Exit::refused) refusal_backoff(p.policy(), *cl.user, db);
        return rc;
    }
    switch (cl.verb) {
        case Verb::print: return admin != nullptr ? admin->print(p, cl, start) : static_cast<int>(Exit::internal);
        case Verb::check: return admin != nullptr ? admin->check(p, start) : static_cast<int>(Exit::internal);
        case Verb::run: {
            if (!attach) return do_command(p, cl, start, db);
            const int rc = do_attach(p, cl, start, db);
            if (rc == static_cast<int>(Exit::refused)) refusal_backoff(p.policy(), *cl.user, db);
            return rc;
        }
        case Verb::kill: return do_kill(p, cl, start);
        case Verb::stop: return do_stop(p, cl, start, db);
        case Verb::list: return do_list(p, cl, start, db);
        default: return static_cast<int>(Exit::internal);
    }
}

}  // namespace

int dispatch(const StartState& start, const std::vector<std::string>& args) { return run_verbs(start, args, nullptr); }

int dispatch_admin(const StartState& start, const std::vector<std::string>& args, const AdminVerbs& verbs) {
    return run_verbs(start, args, &verbs);
}

}  // namespace clihost
