// check.cpp: `check`, a report for a human whose exit status is the answer.
#include "verbs/check.hpp"

#include <sys/statvfs.h>

#include "host/placement.hpp"
#include "host/systemd_scope.hpp"

#include <algorithm>
#include <cstdio>

#include "host/accounts.hpp"
#include "host/audit_sink.hpp"
#include "host/container_check.hpp"
#include "host/disk_quota.hpp"
#include "decide/jail_settings.hpp"
#include "proc/capture.hpp"
#include "proc/jail_start.hpp"
#include "base/log.hpp"
#include "decide/nested_check.hpp"
#include "proc/net.hpp"
#include "priv/pam_session.hpp"
#include "decide/plan.hpp"
#include "decide/proc_decision.hpp"
#include "host/routes.hpp"
#include "host/runtime_state.hpp"
#include "proc/starter.hpp"
#include "host/trusted_path.hpp"
#include "version.hpp"

namespace clihost {
namespace {

// A real jail running command (our own, fixed) as the tenant, without a PAM
// session, on the host's network (the network section tries the isolated one).
bool trial_jail(const Prepared& p, const std::vector<std::string>& command) {
    Policy policy = p.policy();
    policy.allow_caller_command = true;  // our own fixed command, not the caller's
    policy.network = NetworkMode::host;
    auto plan = build_plan(policy, *p.tenant, {JailAction::command, "check", command}, p.probe, {}, {});
    if (!plan) return false;
    const auto status = run_trial_jail(plan.value(), nullptr);
    return status && status.value() == 0;
}

// network = isolated needs slirp4netns, the group, /dev/net/tun and the
// host-address rules; each is proven for real (as the tenant, or as nobody
// without one), and with a tenant an isolated jail is started for real.
template <class Line, class Problem>
void network_section(const Prepared& p, bool can_start, Line line, Problem problem) {
    const Policy& policy = p.policy();
    if (policy.network == NetworkMode::host) {
        line("network", "host (WARNING: the jails share the host's network: services on its loopback and addresses, "
                        "other tenants' listeners and abstract sockets are reachable from them, and they can take "
                        "the host's ports)");
        return;
    }
    line("network", "isolated (a namespace of each jail's own, outbound only through slirp4netns)");
    bool ok = true;
    auto bad = [&](const std::string& k, const std::string& v) {
        problem(k, v);
        ok = false;
    };
    if (auto st = check_trusted_executable("slirp4netns", std::string(kSlirp)); !st) bad("slirp4netns", st.error().message);
    else line("slirp4netns", std::string(kSlirp) + ": ok (root-owned, not writable by group/others)");
    auto net = user_net_creds(p.probe_creds().uid);
    if (!net) {
        bad("network group", net.error().message);
        return;
    }
    line("network group", std::string(kNetGroup) + ": ok (gid " + std::to_string(net.value().gid) + ")");
    if (auto st = tun_usable(net.value()); !st) bad("/dev/net/tun", st.error().message);
    else line("/dev/net/tun", "ok (the jails' network process can open it)");
    if (auto st = host_addresses_blocked(net.value()); !st) bad("host-address rules", st.error().message);
    else line("host-address rules", "ok (the group " + std::string(kNetGroup) +
                                        " is refused the host's loopback and own addresses)");
    if (!p.tenant || !ok || !can_start) return;
    Policy trial = policy;
    trial.allow_caller_command = true;  // our own fixed command, not the caller's
    auto plan = build_plan(trial, *p.tenant, {JailAction::command, "check", {"/bin/true"}}, p.probe, {}, {});
    if (!plan) return bad("network trial", plan.error().message);
    auto ran = run_trial_jail(plan.value(), &net.value());
    if (!ran) bad("network trial", ran.error().message);
    else if (ran.value() != 0) bad("network trial", "an isolated jail exited with status " + std::to_string(ran.value()));
    else line("network trial", "ok (/bin/true ran in an isolated jail with slirp4netns as " + p.tenant->account.name + ")");
}

// [limits]: configured, what this host's cgroups can carry, and, for a
// tenant with a cgroup, the values the kernel reads back.
template <class Line, class Problem>
void limits_section(const Prepared& p, Line&& line, Problem&& problem) {
    const Limits& l = p.policy().limits;
    line("limits", "configured: " + limits_summary(l, std::nullopt));
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    std::string where;
    bool read_only = false;
    for (const auto& h : host.hierarchies) {
        struct statvfs sv{};
        if (::statvfs(h.mount.c_str(), &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0) read_only = true;
        where += (where.empty() ? "" : " ") + (h.controller.empty() ? h.mount : h.controller);
    }
    const std::string version = host.version == CgroupVersion::v2 ? "v2" : "v1";
    if (host.hierarchies.empty() || read_only) {
        const std::string why = host.hierarchies.empty() ? host.why_not : "the cgroup file system is read-only";
        // The start's own decision with no controller usable: a limit the
        // file sets refuses (tasks_max excepted: RLIMIT_NPROC carries it);
        // the defaults are then the container's own limits' to bound.
        auto decided = decide_enforcement(l, resolve_limits(l, 0), host.version, {false, false, false, false, why});
        if (!decided) return problem("cgroups", decided.error().message);
        // The same warnings as the allow line's, the reason said once.
        const auto plain = decide_enforcement(l, resolve_limits(l, 0), host.version, {});
        std::string warned;
        if (plain)
            for (const auto& w : plain.value().warnings) warned += "; " + w;
        line("cgroups", why + warned);
        return;
    }
    if (systemd_booted())
        line("cgroups", version + " (" + where + "), systemd: each tenant's supervisor a transient service " +
                            "started by PID 1, " + slice_cgroup(kTenantSlice) +
                            "/clihost-jail-UID.service (Delegate=yes; cgroup_parent is for hosts without systemd)");
    else
        line("cgroups", version + " (" + where + "), tenants' cgroups under " + l.cgroup_parent);
    if (!p.tenant) return;
    const TenantCgroup cg = open_tenant_cgroup(l, p.tenant->account.uid);
    if (!cg.placed()) {
        line("tenant cgroup", "none (made when its session jail starts)");
        return;
    }
    std::string applied;
    for (const auto& [file, value] : cg.applied()) {
        if (!applied.empty()) applied.append(", ");
        applied.append(file).append(" ").append(value);
    }
    const auto use = cg.usage();
    line("tenant cgroup", cg.path() + ": applied " + applied + "; memory " +
                              (use.memory ? std::to_string(*use.memory) : std::string("-")) + ", tasks " +
                              (use.tasks ? std::to_string(*use.tasks) : std::string("-")));
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

CheckVerdict check_verdict(const std::vector<std::string>& problems, const std::vector<std::string>& open_routes) {
    if (problems.empty() && open_routes.empty()) return {0, "result: a jail can start"};
    std::string why;
    if (!problems.empty()) why = "a jail cannot start (" + joined(problems) + ")";
    if (!open_routes.empty())
        why += (why.empty() ? "" : "; ") + std::string(open_routes.size() == 1 ? "a route around the jail is open ("
                                                                               : "routes around the jail are open (") +
               joined(open_routes) + ")";
    return {static_cast<int>(Exit::host), "result: refused: " + why};
}



int do_check(const Prepared& p, const StartState& start) {
    const Policy& policy = p.policy();
    std::string r;
    bool can_start = true;
    std::vector<std::string> failed;  // the keys of the FAIL lines, in order
    auto line = [&](const std::string& k, const std::string& v) { r += k + ": " + v + "\n"; };
    auto problem = [&](const std::string& k, const std::string& v) {
        line(k, "FAIL: " + v);
        can_start = false;
        if (std::find(failed.begin(), failed.end(), k) == failed.end()) failed.push_back(k);
    };
    line("clihost-jail", CLIHOST_JAIL_VERSION);
    line("invocation", std::string(invocation_name(p.caller.invocation)) + " (caller " + p.caller.name + ", uid " +
                           std::to_string(p.caller.uid) + ")");
    if (p.caller.invocation == Invocation::unprivileged) problem("privileges", "effective uid is not 0");
    // What a container takes away, named (container_check.hpp).
    const bool unprivileged = p.caller.invocation == Invocation::unprivileged;
    for (const auto& [k, v] : container_problems(unprivileged, read_container_facts())) problem(k, v);
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
    // Every attach jail runs it (an attach without it fails closed).
    if (auto st = check_tenant_executable("the attach stub", std::string(kAttachStub)); !st)
        problem("attach stub", std::string(kAttachStub) + ": " + st.error().message);
    else line("attach stub", std::string(kAttachStub) + ": ok (root-owned, not writable by group/others)");
    line("user namespaces", p.probe.user_namespaces ? "yes" : "no (" + p.probe.trial_detail + ")");
    line("fresh procfs", p.probe.fresh_proc ? "yes" : "no (" + p.probe.trial_detail + ")");
    line("host /proc hidepid=invisible", p.probe.host_proc_hidepid ? "yes" : "no");
    line("proc mode", std::string(proc_mode_name(policy.proc)));
    line("nested sandbox", nested_sandbox_summary(policy));
    if (!policy.pam_session) line("pam", "no session");
    else if (auto st = check_pam_service(policy.pam_service); !st) problem("pam", st.error().message);
    else if (auto confdir = pam_confdir_for(policy.pam_service); !confdir) problem("pam", confdir.error().message);
    else if (confdir.value().empty())
        line("pam", "session via /etc/pam.d/" + policy.pam_service +
                        " (libpam's own lookup, which also loads /etc/pam.d/other: the service names other files)");
    else
        line("pam", "session via /etc/pam.d/" + policy.pam_service + " (read through " + confdir.value() +
                        ": the service's own modules only, none of /etc/pam.d/other's)");
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
        // A running jail keeps the settings it started with: say which the
        // file has changed since, and what applies them (not a failure: a
        // jail can start, and the running one is as safe as when it started).
        if (jail) {
            const auto drift = settings_drift(session_jail_settings(*jail), policy);
            if (!drift.recorded)
                line("session jail settings", "unknown (its supervisor recorded none: started by an earlier "
                                              "clihost-jail); " + apply_changes_hint(p.tenant->account.name));
            else if (drift.changes.empty())
                line("session jail settings", "as in the config file");
            else
                line("session jail settings", "WARNING: differ from the config file: " +
                                                  describe_changes(drift.changes) + "; " +
                                                  apply_changes_hint(p.tenant->account.name));
        }
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
    network_section(p, can_start, line, problem);
    limits_section(p, line, problem);
    // Without a tenant: every live session jail whose settings the file has changed.
    if (!p.tenant)
        for (const auto& rec : live_session_jails()) {
            const auto drift = settings_drift(session_jail_settings(rec), policy);
            if (drift.recorded && !drift.changes.empty())
                line("session jail of " + rec.tenant, "WARNING: settings differ from the config file: " +
                                                        describe_changes(drift.changes) + "; " +
                                                        apply_changes_hint(rec.tenant));
        }
    // Whether a tenant can fill the file system of its home for everyone
    // (disk_quota.hpp). Reported, not failed: a jail can start either way.
    {
        SystemAccountDb db;
        const auto accounts =
            p.tenant ? std::vector<Account>{p.tenant->account} : routes::tenant_group_members(policy, db);
        for (const auto& a : accounts)
            line("disk quota of " + a.name, quota_verdict(read_quota_facts(a.home, a.name, a.uid)).text);
    }
    // An open route around the jail fails check too (routes.hpp).
    const auto open = routes::report_for_check(policy, p.tenant ? &p.tenant->account : nullptr, r);
    if (const auto sink = probe_audit_sink(); sink.ok) line("audit log", sink.detail); else problem("audit log", sink.detail);
    // The exit status is the answer, and the last line says the same, with why.
    const CheckVerdict verdict = check_verdict(failed, open);
    r += verdict.line + "\n";
    (void)std::fputs(r.c_str(), stdout);
    (void)std::fflush(stdout);
    log::audit(verdict.exit == 0 ? "allow" : "fail", verdict.exit == 0 ? "check passed" : "check found problems");
    return verdict.exit;
}

}  // namespace clihost
