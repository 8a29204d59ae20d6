// session.cpp: find, start, stop the session jail. The privileged sequence
// of a start is serve_session(), steps 1 to 6 (docs/ARCHITECTURE.md has it
// on one screen); the event loop is owner.cpp.
// Size: the supervisor's whole start (clean state, cgroup, PAM, the session
// jail, record, endpoint) and stop stay in one file, read top to bottom.
#include "proc/session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <grp.h>
#include <linux/keyctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>

#include "base/fault.hpp"
#include "proc/clean_state.hpp"
#include "decide/proc_decision.hpp"
#include "proc/jail_start.hpp"
#include "proc/supervise.hpp"
#include "host/placement.hpp"
#include "host/systemd_scope.hpp"
#include "base/log.hpp"
#include "proc/net.hpp"
#include "priv/pam_session.hpp"
#include "decide/request.hpp"
#include "host/accounts.hpp"
#include "host/config_file.hpp"
#include "host/jail_view.hpp"
#include "decide/jail_files.hpp"
#include "proc/owner.hpp"
#include "proc/scheduling.hpp"
#include "version.hpp"

namespace clihost {
namespace {

constexpr int kMaxPending = 8;  // the endpoint's backlog (owner.cpp caps the pending handshakes)
constexpr int kLockSeconds = 30;
constexpr int kStartSeconds = 20;
constexpr int kStopSeconds = 10;
constexpr int kStartBoundSeconds = 60;  // a supervisor's start, to its record (each step has its own, shorter)

// Waits until the process behind `pidfd` has exited (pidfds poll readable).
bool wait_pidfd(int pidfd, int seconds) {
    pollfd p{pidfd, POLLIN, 0};
    const auto deadline = std::time(nullptr) + seconds;
    while (true) {
        const auto left = deadline - std::time(nullptr);
        if (left < 0) return false;
        const int r = ::poll(&p, 1, static_cast<int>(left * 1000 + 100));
        if (r > 0) return true;
        if (r == 0) return false;
        if (errno != EINTR) return false;
    }
}

bool signal_pidfd(int pidfd, int sig) {
    return ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0;
}

// The limits in the start's audit line: configured, applied, and what
// this host does not enforce.
std::string limits_line(const Limits& l, const TenantCgroup& cg) {
    std::string out = "limits " + limits_summary(l, cg.resolved());
    out += cg.placed() ? ", cgroup " + cg.path() : ", no cgroup";
    for (const auto& w : cg.warnings()) out += "; warning: " + w;
    return out;
}

// The supervisor's endpoint: RUNTIME/UID.sock, a SOCK_SEQPACKET listener
// made by root in root's 0700 directory, mode 0600.
Result<UniqueFd> make_endpoint(const RuntimeDir& dir, uid_t uid) {
    const std::string name = endpoint_name(uid);
    const std::string path = std::string(CLIHOST_JAIL_RUNTIME_DIR) + "/" + name;
    UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!sock.valid()) return fail(Exit::internal, "cannot make the supervisor's endpoint");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return fail(Exit::internal, "the runtime directory's path is too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::unlinkat(dir.fd(), name.c_str(), 0) != 0 && errno != ENOENT)
        return fail(Exit::internal, "cannot remove a stale endpoint " + path);
    const mode_t old = ::umask(077);
    const int bound = ::bind(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    ::umask(old);
    if (bound != 0 || ::listen(sock.get(), kMaxPending) != 0)
        return fail(Exit::internal, std::string("cannot listen on ") + path + ": " + std::strerror(errno));
    return sock;
}

// The session jail, started by its supervisor (at its start for an attach,
// or later for the first attach of a supervisor that has none): the plan
// with PAM's environment, the watcher (the tenant) starts the jail and says
// when tmux is up; an isolated jail's network is attached before anything
// in it runs. On failure nothing of it is left (its watcher is reaped).
Result<SessionJail> start_session_jail(const SessionStart& s, const ValidRequest& serve,
                                       const std::vector<std::string>& pam_env, const Rlimits& limits,
                                       const JailPlacement& place, const TenantCreds* net) {
    auto plan = build_plan(s.policy, s.tenant, serve, s.probe, s.caller_env, pam_env);
    if (!plan) return plan.error();
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return fail(Exit::internal, "pipe failed");
    const UniqueFd ready_read(ready[0]);
    int chan[2] = {-1, -1};
    if (net != nullptr && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0) {
        ::close(ready[1]);
        return fail(Exit::internal, "socketpair failed");
    }
    const UniqueFd ours(chan[0]);
    auto start = SessionJailStart::make(plan.value(), ready[1],
                                        net != nullptr ? std::optional(NetHandoff{chan[1], chan[0]}) : std::nullopt);
    auto watcher = start ? start_jail(start.value(), TenantContext{&limits, &place}) : Result<pid_t>(start.error());
    ::close(ready[1]);
    if (chan[1] >= 0) ::close(chan[1]);
    if (!watcher) return watcher.error();
    SessionJail jail{watcher.value(), {}, "/proc " + plan.value().proc_source + ", network " +
                                              std::string(jail_net_name(plan.value().net)),
                     audit_reason("", plan.value())};
    Status up = ok_status();
    bool bwrap_blocked = false;
    if (net != nullptr) {
        auto attached = attach_user_net(ours.get(), *net, kStartSeconds, place.cgroup);
        if (attached) {
            jail.net = std::move(attached).value();
        } else if (attached.error().message != kJailEndedEarly) {
            up = attached.error();
            bwrap_blocked = true;
        }
    }
    if (up) up = read_report(ready_read.get(), kStartSeconds);
    if (up) return jail;
    // Never SIGKILL a watcher that holds bwrap's gate: with our end of the
    // channel closed it ends bwrap itself (send_namespaces).
    if (!bwrap_blocked) ::kill(jail.watcher, SIGKILL);
    int st = 0;
    while (::waitpid(jail.watcher, &st, 0) < 0 && errno == EINTR) {}
    return up.error();
}

// jail.json (jail_view.hpp), which the session jail binds: the settings
// this supervisor started with (`started`: its start), and those that
// differ from the config file as it is now, read again (the operator may
// have changed it since; not known while it cannot be read). Returns what
// an attach shows the tenant of that (attach_notice): "" if nothing.
Result<std::string> refresh_jail_view(const SessionStart& s, long long started) {
    const auto now = load_policy(s.config_path, s.config_explicit);
    const JailSettings ran = jail_settings(s.policy);
    const SettingsDrift drift = now ? settings_drift(ran, now.value().policy) : SettingsDrift{};
    if (auto st = write_jail_view(s.tenant.account.uid, jail_info_json(ran, started, drift, std::time(nullptr))); !st)
        return st.error();
    return attach_notice(drift);
}

// The front's tenant, checked again now in a process the caller can no
// longer delay (tenant_unchanged, the host's account database).
Status tenant_still_valid(const SessionStart& s) {
    return tenant_unchanged(s.policy, s.tenant, SystemAccountDb{}, inspect_home);
}

// An OOM kill in the jails leaf, told on the tenant's terminals (where
// memory_max limits it; SECURITY.md row 50): the owner's watch, from the
// count at the start.
void watch_oom_kills(OwnerContext& oc, const TenantCgroup& cg, std::uint64_t kills_before) {
    if (!cg.placed() || !cg.resolved().memory_max) return;
    auto w = cg.watch_oom();
    if (!w) {
        log::audit("warn", w.error().message + ": an OOM kill is not told on the tenant's terminals");
        return;
    }
    oc.oom_watch = std::move(w).value();
    oc.oom_kills = kills_before;
}

// The start's bound: past it, SIGALRM's handler says so on the start-up
// report (fd 3, the supervisor's until the record is written) and ends
// the process; its lock goes with it. Only write and _exit in the handler.
char g_bound_line[128];
std::size_t g_bound_len = 0;

void start_bound_hit(int) {
    (void)!::write(3, g_bound_line, g_bound_len);
    ::_exit(static_cast<int>(Exit::host));
}

Status bound_the_start(int seconds) {
    const int n = std::snprintf(g_bound_line, sizeof g_bound_line,  // write_report's line, made ahead
                                "fail %d the supervisor's start did not end within %d s\n",
                                static_cast<int>(Exit::host), seconds);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof g_bound_line)
        return fail(Exit::internal, "cannot bound the start");
    g_bound_len = static_cast<std::size_t>(n);
    struct sigaction sa {};
    sa.sa_handler = start_bound_hit;
    if (::sigaction(SIGALRM, &sa, nullptr) != 0) return fail(Exit::internal, "cannot bound the start");
    ::alarm(static_cast<unsigned>(seconds));
    return ok_status();
}

void end_the_bound() {
    ::alarm(0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    (void)::sigaction(SIGALRM, &dfl, nullptr);
}

// The parent the double fork leaves us with once the first child is gone
// (it exits right after forking us): init, or a subreaper above our
// starter (a proxy that set PR_SET_CHILD_SUBREAPER, a user's service
// manager). Waits at most 1 s for the first child's exit; none where it
// had exited before main read our parent (`first_child` is then init's 1:
// waiting for a change from it cost every such start 1 s).
pid_t adoptive_parent(pid_t first_child) {
    if (first_child <= 1) return ::getppid();
    for (int i = 0; i < 1000 && ::getppid() == first_child; ++i) ::usleep(1000);
    return ::getppid();
}

// The supervisor: root, in a session of its own, the owner of every jail of
// the tenant, holding the tenant's PAM session for as long as it owns a
// jail. Started for an attach, it starts the session jail at once; for a
// one-off, none (the first attach starts it). Returns its exit status.
// The privileged sequence, in the numbered steps below.
int serve_session(const SessionStart& s, int report_fd, UniqueFd lock, pid_t first_child) {
    auto& ctx = log::context();
    ctx.action = "session";
    ctx.session = "-";
    const Account& t = s.tenant.account;
    auto failed = [&](const Error& e) {
        log::audit("fail", std::string(s.session_jail ? "session jail" : "supervisor") + " not started: " + e.message);
        write_report(report_fd, e);
        return static_cast<int>(e.code);
    };
    // 1. A clean state, the starter's: nothing of the caller. The tenant's
    //    lock, ours until the record is written (then a second start finds
    //    this supervisor, and `stop` can end it). The start has a bound of
    //    its own (SIGALRM): a PAM module that hangs must not keep the
    //    lock, and every start and stop of the tenant with it, for ever.
    if (auto st = bound_the_start(fault::fail("short_start_bound") ? 3 : kStartBoundSeconds); !st)  // tests: 3 s
        return failed(st.error());
    auto opened_dir = RuntimeDir::open();
    if (!opened_dir) return failed(opened_dir.error());
    const RuntimeDir& dir = opened_dir.value();
    // Every signal we handle arrives on a descriptor (the event loop's).
    if (auto st = block_relayed_signals(); !st) return failed(st.error());
    const sigset_t group = group_signals();
    if (::sigprocmask(SIG_BLOCK, &group, nullptr) != 0) return failed(fail(Exit::internal, "sigprocmask failed"));
    const sigset_t handled = relayed_signals();
    const UniqueFd sigfd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd.valid()) return failed(fail(Exit::internal, "signalfd failed"));
    // Subreaper: what a jail's watcher leaves behind comes to us.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return failed(fail(Exit::internal, "cannot become a subreaper"));
    //    What the policy refuses, refused before the PAM session opens.
    const auto serve = validate_request(s.policy, t, Request{JailAction::serve, "", {}}, s.probe);
    if (!serve) return failed(serve.error());
    //    The tenant's cgroup, its limits written before anything enters
    //    (an explicit limit this host cannot carry refuses, exit 3); this
    //    process in its leaf, out of the caller's cgroup (a restart of the
    //    proxy's service no longer reaches the session jail), before PAM.
    //    Where systemd is PID 1, systemd moves it into the tenant's scope first.
    auto cg = place_supervisor(s.policy.limits, t.uid);
    if (!cg) return failed(cg.error());
    const JailPlacement place{&cg.value(), s.policy.limits.tasks_max};
    const auto oom_before = cg.value().usage().oom_kills.value_or(0);
    // 2. An isolated network's prerequisites, proven (exit 3 if missing):
    //    never a jail with half of its isolation.
    //    The rules are watched from before their proof to the end: a jail
    //    whose rules go while it runs is ended (Owner, on_rules_event).
    std::optional<TenantCreds> net;
    UniqueFd rules_watch;
    if (s.policy.network == NetworkMode::isolated) {
        auto watch = watch_host_rules();
        if (!watch) return failed(watch.error());
        rules_watch = std::move(watch).value();
        auto creds = require_isolation(t.uid);
        if (!creds) return failed(creds.error());
        net = creds.value();
    }
    // 3. The PAM session, opened once for the supervisor's lifetime. Its
    //    limits (pam_limits sets them on this process) are the tenant's:
    //    read back for every jail child, and the baseline restored here.
    std::unique_ptr<PamSession> pam;
    std::vector<std::string> pam_env;
    if (s.policy.pam_session) {
        auto opened = PamSession::open(s.policy.pam_service, t.name, s.ruser, "");
        if (!opened) return failed(opened.error());
        pam = std::move(opened).value();
        pam_env = pam->environment();
    }
    const Rlimits tenant_limits = current_rlimits();
    if (!tenant_limits.ok || !apply_rlimits(baseline_rlimits()))
        return failed(fail(Exit::internal, "cannot read the tenant's limits"));
    const TenantCreds* net_creds = net ? &*net : nullptr;
    // 4. The session jail, for an attach (a one-off's supervisor has none),
    //    after the jail.json it binds.
    const auto started = static_cast<long long>(std::time(nullptr));
    Result<SessionJail> jail = SessionJail{};
    Status up = ok_status();
    if (auto view = refresh_jail_view(s, started); !view) up = view.error();
    if (up && s.session_jail) jail = start_session_jail(s, serve.value(), pam_env, tenant_limits, place, net_creds);
    if (up && !jail) up = jail.error();
    // 5. The endpoint and the record, once the jail is really up.
    SupervisorRecord rec{t.name, t.uid, ::getpid(), own_start_ticks().value_or(0), current_boot_id(),
                         started, kRecordVersion};
    // The fault-injection build stands in for a build before the owner
    // model: a v1 record, no endpoint
    // (test_owner.py::test_a_session_jail_of_the_previous_version_is_refused_by_name).
    if (fault::fail("old_record")) rec.version = 1;
    // ...and for a build before the split (its supervisor a fork of the
    // setuid image): a v3 record, the same endpoint and protocol
    // (test_owner.py::test_a_supervisor_of_the_build_before_the_split_serves_until_stop).
    if (fault::fail("pre_split_record")) rec.version = 3;
    if (up && (rec.start_ticks == 0 || rec.boot_id.empty()))
        up = fail(Exit::internal, "cannot read this process's start time");
    UniqueFd attach_netns;
    if (up) {
        auto made = make_empty_netns();
        if (made) attach_netns = std::move(made).value();
        else log::audit("warn", made.error().message + "; every attach jail makes its own");
    }
    //    What this jail starts with, for `list` and `check` to compare
    //    with the config file later (jail_settings.hpp).
    if (up) up = dir.write_settings(rec, jail_settings(s.policy));
    UniqueFd listener;
    if (up && speaks_our_protocol(rec)) {
        auto ep = make_endpoint(dir, t.uid);
        if (ep) listener = std::move(ep).value();
        else up = ep.error();
    }
    // The session jail's mark before the record, under the lock: a `stop`
    // that takes the lock the moment it is released says what it stopped.
    if (up && jail.value().watcher > 0) dir.mark_session_jail(t.uid, rec.pid, true);
    if (up) up = dir.write(rec);
    if (!up) {
        if (listener.valid()) (void)::unlinkat(dir.fd(), endpoint_name(t.uid).c_str(), 0);
        if (jail && jail.value().watcher > 0) {
            ::kill(jail.value().watcher, SIGKILL);
            (void)supervise(jail.value().watcher);
        }
        remove_jail_view(t.uid);
        return failed(up.error());  // the lock goes with this process, once its jail is gone
    }
    lock.reset();
    end_the_bound();
    //    Our parent is init (the starter has long ended by now); a
    //    subreaper above the caller, if any, takes us instead. It sees our
    //    end (SIGCHLD, wait) and can do nothing else to us (we are root
    //    through and through): said, not refused.
    if (const pid_t parent = adoptive_parent(first_child); parent != 1) {
        std::string why("the supervisor's parent is pid ");
        why.append(std::to_string(parent)).append(", a subreaper above its caller, not init: it sees only its end");
        log::audit("warn", why);
    }
    const SessionJail& sj = jail.value();
    log::audit("allow", (s.session_jail ? "session jail started, supervisor " + std::to_string(rec.pid) + ", " + sj.about
                                        : "supervisor " + std::to_string(rec.pid) + " started for a one-off jail") +
                            (sj.net.pid > 0 ? " (slirp4netns " + std::to_string(sj.net.pid) + ")" : "") +
                            (pam ? ", PAM session open" : ", no PAM session") + ", " +
                            limits_line(s.policy.limits, cg.value()) + sj.warnings);
    write_report(report_fd, ok_status());
    ::close(report_fd);
    // 6. Serve connections while the supervisor owns a jail (the session
    //    jail, attach and one-off jails); then every jail ends, and PAM
    //    closes, once. `stop` ends the jails by their cgroup, whatever they
    //    did (setsid, double forks, stopped processes).
    OwnerContext oc{s, dir, pam_env, tenant_limits, place, net_creds, std::move(attach_netns),
                    [&] { return start_session_jail(s, serve.value(), pam_env, tenant_limits, place, net_creds); },
                    nullptr, [&] { return tenant_still_valid(s); }, std::move(rules_watch), {}, {}, 0};
    watch_oom_kills(oc, cg.value(), oom_before);
    if (pam)
        oc.check_account = [&](const std::string& caller) {
            return PamSession::check_account(s.policy.pam_service, t.name, caller);
        };
    oc.refresh_view = [&] {
        auto notice = refresh_jail_view(s, rec.started);
        if (!notice) log::audit("warn", notice.error().message);
        return notice ? notice.value() : std::string();
    };
    const OwnerEnd end = serve_connections(std::move(oc), std::move(jail).value(), std::move(listener), sigfd.get());
    const int status = end.session_status;
    const auto ooms = cg.value().usage().oom_kills.value_or(0) - oom_before;
    dir.remove_if(t.uid, rec.pid);
    std::string closed = pam ? ", PAM session closed" : "";
    if (pam)
        if (auto st = pam->close(); !st) closed = ", " + st.error().message;
    // The supervisor's own end: no request's caller.
    ctx.caller = "-";
    ctx.caller_uid = -1;
    ctx.via = "-";
    ctx.session = "-";
    ctx.action = "session";
    const std::string oom_note = ooms > 0 ? ", " + std::to_string(ooms) + " process(es) OOM-killed in its cgroup" : "";
    if (!end.session_ran) {
        // A one-off's supervisor: its last line names that jail.
        ctx.session = end.last_session.empty() ? "-" : end.last_session;
        log::audit("exit", std::string(end.stopped ? "supervisor stopped" : "supervisor ended with its last jail") +
                               ", one-off jail status " + std::to_string(end.last_status) + oom_note + closed);
        return 0;
    }
    const std::string why = end.stopped ? "stop" : ooms > 0 && exit_status_of(status) != 0 ? "OOM" : "its last session";
    log::audit("exit", "session jail ended (" + why + ") with status " + std::to_string(exit_status_of(status)) +
                           oom_note + closed);
    return 0;
}

// The policy the supervisor acts on: the file read again (the front's
// path: root's CLIHOST_JAIL_CONFIG, or the built-in one).
Result<LoadedPolicy> reload_policy(const SupervisorArgs& a) {
    return load_policy(a.config.value_or(CLIHOST_JAIL_CONFIG_PATH), a.config.has_value());
}

// The tenant the front validated, validated again here by name (the
// account database and the file as they are now) and by uid.
Result<Tenant> revalidate_tenant(const Policy& policy, const SupervisorArgs& a) {
    auto t = validate_tenant(policy, a.tenant, SystemAccountDb{}, inspect_home);
    if (!t) return t.error();
    if (t.value().account.uid != a.uid)
        return fail(Exit::refused, "tenant " + a.tenant + " refused: its uid changed while this request waited");
    return t;
}

// The first caller's extra_env candidates that this policy passes.
CallerEnv allowed_env(const Policy& policy, const CallerEnv& given) {
    CallerEnv out;
    for (const auto& [name, value] : given)
        if (std::find(policy.extra_env.begin(), policy.extra_env.end(), name) != policy.extra_env.end() &&
            is_well_formed_env_value(value))
            out.emplace(name, value);
    return out;
}

}  // namespace

namespace {

// Under systemd, the supervisor is not this process: PID 1 starts this
// program again (--in-unit) as the main process of the tenant's transient
// service, with our report (fd 3) as its stdout, so the front reads the
// service's report; this process then ends without one of its own. Where
// the unit exists already (a concurrent first connection's supervisor
// starting, or one ending), its live record, under the tenant's lock, is
// the answer; until it has one, and while the unit ends, asked again
// (kUnitWaitSeconds at most).
constexpr int kUnitWaitSeconds = 10;

int launch_unit(const SupervisorArgs& a, const Policy& policy) {
    auto refuse = [&](const Error& e) {
        log::audit("fail", "supervisor not started: " + e.message);
        write_report(3, e);
        return static_cast<int>(e.code);
    };
    SupervisorArgs unit = a;
    unit.in_unit = true;
    const std::vector<std::string> argv = supervisor_argv(unit);
    auto dir = RuntimeDir::open();
    if (!dir) return refuse(dir.error());
    bool placed = false;
    for (int waited_ms = 0; waited_ms < kUnitWaitSeconds * 1000; waited_ms += 100) {
        auto started = start_tenant_unit(policy.limits, a.uid, CLIHOST_JAIL_SUPERVISOR_PATH, argv, 3);
        if (!started) return refuse(started.error());
        if (started.value() == UnitStart::started) return 0;
        // The lock is taken out of the caller's cgroups, as a supervisor's.
        if (!placed) {
            if (auto st = place_lock_holder(policy.limits, a.uid); !st)
                return refuse(fail(st.error().code, "cannot leave the caller's cgroup: " + st.error().message));
            placed = true;
        }
        auto lock = dir.value().lock_tenant(a.uid, kLockSeconds);
        if (!lock) return refuse(lock.error());
        if (auto r = dir.value().read(a.uid); r && record_is_live(*r)) {
            write_report(3, ok_status());
            return 0;
        }
        ::usleep(100'000);  // (the lock is released here, with `lock`)
    }
    return refuse(fail(Exit::host, "the tenant's service " + tenant_unit_name(a.uid) + " runs without a live supervisor for " +
                                       std::to_string(kUnitWaitSeconds) + " s: connect again"));
}

}  // namespace

// clihost-jail-supervisor start (exec'd by the front's starter after its
// double fork, or by PID 1 as the tenant's service; report on fd 3): under
// systemd, launch_unit; else out of the caller's cgroups, the tenant's
// lock; under it, a supervisor that started meanwhile is used; else the
// file, read again, must be the one the front checked against, the tenant
// is validated again, and this process becomes the supervisor (it keeps
// the lock until its record is written; it is nobody's child but init's,
// or a subreaper's, and no session leader: it can never get a terminal;
// under systemd PID 1 makes it the leader of a session without one, and it
// opens no terminal: they reach it only over SCM_RIGHTS).
int supervisor_start(const SupervisorArgs& a, pid_t starter) {
    auto refuse = [&](const Error& e) {
        log::audit(e.code == Exit::refused ? "deny" : "fail", "supervisor not started: " + e.message);
        write_report(3, e);
        return static_cast<int>(e.code);
    };
    auto now = reload_policy(a);
    if (!now) return refuse(now.error());
    const Policy& policy = now.value().policy;
    if (!a.in_unit && systemd_booted()) return launch_unit(a, policy);
    // In its unit it is in no cgroup of the caller's.
    if (!a.in_unit)
        if (auto st = place_lock_holder(policy.limits, a.uid); !st)
            return refuse(fail(st.error().code, "cannot leave the caller's cgroup: " + st.error().message));
    auto dir = RuntimeDir::open();
    if (!dir) return refuse(dir.error());
    auto lock = dir.value().lock_tenant(a.uid, kLockSeconds);
    if (!lock) return refuse(lock.error());
    if (auto r = dir.value().read(a.uid); r && record_is_live(*r)) {
        write_report(3, ok_status());
        return 0;
    }
    if (now.value().digest != a.config_digest)
        return refuse(fail(Exit::host, "the configuration changed while this request waited: connect again"));
    auto tenant = revalidate_tenant(policy, a);
    if (!tenant) return refuse(tenant.error());
    const TenantCreds who = creds_of(tenant.value());
    const HostProbe probe = probe_host(policy.ro_bind, who.uid, who.gid, proc_needs_host_trial(policy.proc));
    const CallerEnv env = allowed_env(policy, a.caller_env);
    const SessionStart s{policy, tenant.value(), probe, env, a.caller, a.session_jail,
                         a.config.value_or(CLIHOST_JAIL_CONFIG_PATH), a.config.has_value()};
    return serve_session(s, 3, std::move(lock).value(), a.in_unit ? 0 : starter);
}

namespace {

// The supervisor of `uid`'s record ended (SIGTERM, SIGKILL after a grace
// period); the caller holds the tenant's lock.
Result<Stopped> stop_supervisor(const RuntimeDir& dir, uid_t uid) {
    auto r = dir.read(uid);
    if (!r) return Stopped::none;
    // A supervisor of an earlier version keeps no mark: it is named as
    // before (a session jail's).
    const Stopped what =
        r->version < kFirstServedRecord || dir.runs_session_jail(*r) ? Stopped::session_jail : Stopped::supervisor_only;
    const UniqueFd pidfd = open_supervisor(*r);
    if (!pidfd.valid()) {
        // A record left by a crash or a reboot: not trusted, not followed.
        // What its supervisor would have removed goes with it.
        dir.remove_attach_netns(uid);
        dir.remove_if(uid, r->pid);
        return Stopped::none;
    }
    // The supervisor relays SIGTERM: bwrap dies, its pid namespace with it,
    // then PAM is closed and the record removed.
    if (!signal_pidfd(pidfd.get(), SIGTERM)) return fail(Exit::internal, "cannot signal the session jail's supervisor");
    if (!wait_pidfd(pidfd.get(), kStopSeconds)) {
        // Its watcher hears of its death (parent-death signal) and ends the jail.
        (void)signal_pidfd(pidfd.get(), SIGKILL);
        (void)wait_pidfd(pidfd.get(), 2);
        // What it would have removed itself: its endpoint, the attach
        // namespace, the record with its settings and mark.
        (void)::unlinkat(dir.fd(), endpoint_name(uid).c_str(), 0);
        dir.remove_attach_netns(uid);
        dir.remove_if(uid, r->pid);
        log::audit("warn", "the session jail's supervisor did not end within " + std::to_string(kStopSeconds) +
                               " s and was killed");
    }
    return what;
}

// The stop itself, under the tenant's lock, in stop_as_root's process.
Result<Stopped> stop_locked(uid_t uid, const Limits& limits) {
    auto dir = RuntimeDir::open();
    if (!dir) return dir.error();
    auto lock = dir.value().lock_tenant(uid, kLockSeconds);
    if (!lock) return lock.error();
    auto was_running = stop_supervisor(dir.value(), uid);
    if (!was_running) return was_running.error();
    // Whatever is left in the tenant's jails (of a supervisor that was
    // killed, a one-off jail), then the cgroup, under the tenant's lock: no
    // start can be setting it up meanwhile. Nothing of the tenant survives.
    const TenantCgroup cg = open_tenant_cgroup(limits, uid);
    if (cg.placed()) {
        if (auto st = cg.kill_jails(); !st) return st.error();
        // A process still in a leaf (a killed supervisor's watcher, ending
        // on its parent-death signal; a jail ending): refused (EBUSY) and
        // tried again, 2 s at most; then the cgroup stays for the next start.
        Status removed = cg.remove();
        for (int i = 0; !removed && i < 20; ++i) {
            ::usleep(100'000);
            removed = cg.remove();
        }
        if (!removed) log::audit("warn", removed.error().message);
    }
    // jail.json: no jail binds it now, and no supervisor writes it.
    remove_jail_view(uid);
    return was_running.value();
}

}  // namespace

// clihost-jail-supervisor stop (exec'd by the front's starter; the caller
// can stop its front at any step, never this): out of the caller's
// cgroups, then the stop under the tenant's lock. Reports on fd 3, then
// returns what it stopped (a Stopped), or kStopFailed.
int supervisor_stop(const SupervisorArgs& a) {
    auto now = reload_policy(a);
    Result<Stopped> stopped = now ? Result<Stopped>(Stopped::none) : Result<Stopped>(now.error());
    if (now)
        if (auto st = place_lock_holder(now.value().policy.limits, a.uid); !st)
            stopped = fail(st.error().code, "cannot leave the caller's cgroup: " + st.error().message);
    if (stopped) stopped = stop_locked(a.uid, now.value().policy.limits);
    // The audit line is this process's: the front may be gone by now.
    if (stopped) log::audit("allow", stopped_text(stopped.value()));
    else log::audit("fail", stopped.error().message);
    write_report(3, stopped ? ok_status() : Status(stopped.error()));
    return stopped ? static_cast<int>(stopped.value()) : kStopFailed;
}

}  // namespace clihost
