// jail_start.cpp: the kinds' factories and the one start of any jail. May
// fork, and in the child (root until run_as_tenant) take the jail's
// descriptors, network namespace, limits and cgroup before the drop; every
// path of the child ends in _exit. The privileged sequence of every jail is
// start_jail's, on one screen.
#include "proc/jail_start.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <type_traits>

#include "base/fault.hpp"
#include "base/fd_pass.hpp"
#include "base/unique_fd.hpp"
#include "priv/privdrop.hpp"
#include "proc/net.hpp"
#include "proc/supervise.hpp"
#include "proc/watcher.hpp"

namespace clihost {
namespace {

// How long check's trial may take to attach its network.
constexpr int kStartSeconds = 10;

// The plan's own shape (render_bwrap_argv: --new-session, --json-status-fd)
// and the kind's must agree: both follow the action.
static_assert(traits_of(JailKind::session).own_session == plans_own_session(JailAction::serve));
static_assert(!traits_of(JailKind::attach).own_session && !traits_of(JailKind::one_off).own_session &&
              !traits_of(JailKind::query).own_session);
static_assert(traits_of(JailKind::one_off).reports_status == plans_status_report(JailAction::command));
static_assert(!traits_of(JailKind::session).reports_status && !traits_of(JailKind::attach).reports_status &&
              !traits_of(JailKind::query).reports_status);

Error misfit(const char* what) { return fail(Exit::internal, what); }

bool stdio_valid(const Stdio& s) { return s.fd[0] >= 0 && s.fd[1] >= 0 && s.fd[2] >= 0; }

bool net_valid(const NetHandoff& n) { return n.watchers_end >= 0 && n.parents_end >= 0; }

// The typed start, read once for the child's linear sequence.
struct Steps {
    const Plan* plan{nullptr};
    JailKind kind{};
    const Stdio* stdio{nullptr};
    int tenant_netns{-1};
    NetHandoff net{};
    ConnHandoff conn{};
    int ready_fd{-1};
};

Steps steps_of(const JailStart& start) {
    return std::visit(
        [](const auto& s) {
            Steps x{&s.plan, std::decay_t<decltype(s)>::kind};
            if constexpr (requires { s.stdio; }) x.stdio = &s.stdio;
            if constexpr (requires { s.tenant_netns; }) x.tenant_netns = s.tenant_netns;
            if constexpr (requires { s.ready_fd; }) x.ready_fd = s.ready_fd;
            if constexpr (requires { s.conn; }) x.conn = s.conn;
            if constexpr (requires { s.net.value(); }) {
                if (s.net) x.net = *s.net;
            } else if constexpr (requires { s.net; }) {
                x.net = s.net;
            }
            return x;
        },
        start);
}

bool raise_oom_score() noexcept {
    const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    const bool raised = fd >= 0 && ::write(fd, "1000", 4) == 4;
    if (fd >= 0) ::close(fd);
    return raised;
}

[[noreturn]] void quit(const Error& e) noexcept {
    report_tenant_failure(e);
    ::_exit(static_cast<int>(e.code));
}

[[noreturn]] void quit_silently() noexcept { ::_exit(static_cast<int>(Exit::internal)); }

}  // namespace

Result<JailStart> SessionJailStart::make(const Plan& plan, int ready_fd, std::optional<NetHandoff> net) {
    if (plan.action != JailAction::serve) return misfit("a session jail serves tmux");
    if (ready_fd < 0) return misfit("a session jail reports its start");
    if ((plan.net == JailNet::isolated) != net.has_value() || (net && !net_valid(*net)))
        return misfit("an isolated jail hands its namespaces over, and only it");
    if (plan.net == JailNet::tenant_empty) return misfit("a session jail holds the tenant's namespace, it joins none");
    return JailStart(SessionJailStart(plan, ready_fd, net));
}

Result<JailStart> AttachJailStart::make(const Plan& plan, const Stdio& stdio, int tenant_netns, ConnHandoff conn) {
    if (plan.action != JailAction::attach) return misfit("an attach jail runs a tmux client");
    if (!stdio_valid(stdio)) return misfit("a connection jail takes three descriptors");
    if (conn.watchers_end < 0 || conn.parents_end < 0) return misfit("an attach jail waits for its connection");
    if (plan.command != std::vector<std::string>{std::string(kAttachStub)} || !plan.env.empty() ||
        plan.handed_command.empty())
        return misfit("an attach jail runs the attach stub, which is handed its client");
    if ((plan.net == JailNet::tenant_empty) != (tenant_netns >= 0))
        return misfit("an attach jail joins the tenant's empty network namespace only as planned");
    if (plan.net != JailNet::none && plan.net != JailNet::tenant_empty) return misfit("an attach jail has no network");
    return JailStart(AttachJailStart(plan, stdio, tenant_netns, conn));
}

Result<JailStart> OneOffJailStart::make(const Plan& plan, const Stdio& stdio, std::optional<NetHandoff> net,
                                        ConnHandoff conn) {
    if (plan.action != JailAction::command) return misfit("a one-off jail runs the caller's command");
    if (!stdio_valid(stdio)) return misfit("a connection jail takes three descriptors");
    if (conn.watchers_end < 0 || conn.parents_end < 0) return misfit("a one-off jail waits for its connection");
    if (plan.command != std::vector<std::string>{std::string(kAttachStub)} || !plan.env.empty() ||
        plan.handed_command.empty())
        return misfit("a one-off jail runs the attach stub, which is handed its command");
    if ((plan.net == JailNet::isolated) != net.has_value() || (net && !net_valid(*net)))
        return misfit("an isolated one-off jail hands its namespaces over, and only it");
    if (plan.net == JailNet::tenant_empty) return misfit("only an attach jail joins the tenant's namespace");
    return JailStart(OneOffJailStart(plan, stdio, net, conn));
}

Result<JailStart> QueryJailStart::make(const Plan& plan, const Stdio& stdio) {
    if (plan.action != JailAction::list_sessions && plan.action != JailAction::kill_session)
        return misfit("a query jail lists or kills tmux sessions");
    if (!stdio_valid(stdio)) return misfit("a query jail takes three descriptors");
    if (plan.net != JailNet::none) return misfit("a query jail has no network");
    return JailStart(QueryJailStart(plan, stdio));
}

JailKind kind_of(const JailStart& start) {
    return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kind; }, start);
}

// The privileged sequence of every jail, on one screen. The child, root
// until run_as_tenant, in this order: (1) the parent's end of the network
// channel closed (its death: end of file); (2) a connection's descriptors
// as its stdio, a session of its own (the caller's terminal is never the
// jail's controlling terminal: no TIOCSTI, no job control of the caller's);
// (3) the tenant's empty network namespace (an attach jail that plans it);
// (4) the tenant's limits (pam_limits'); (5) every kind's, a session jail
// started by the event loop too: nothing else of the supervisor's (its
// endpoint, other connections and their terminals, PAM's), the connection
// channel as fd 3, the network channel and the session's report next; (6)
// RLIMIT_NPROC, and the jails leaf opened for the bwrap child to enter (the
// watcher stays in the supervisor's leaf); (7) the tenant (run_as_tenant:
// dies by SIGHUP with us), the watcher.
Result<pid_t> start_jail(const JailStart& start, const TenantContext& tenant) {
    const Steps s = steps_of(start);
    const JailTraits kind = traits_of(s.kind);
    // Relayed signals stay pending until this process waits (supervise, or
    // the supervisor's signalfd): none ends it with a jail still running.
    if (auto st = block_relayed_signals(); !st) return st.error();
    const pid_t self = ::getpid();
    const pid_t child = fault::fail("fork") ? -1 : ::fork();
    if (child < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    if (child > 0) return child;
    // The child: noexcept, so nothing it throws unwinds into our caller's code.
    [&]() noexcept {
        // A waiting jail's failure goes to its supervisor on the connection
        // channel (its stdio is /dev/null until a connection comes).
        int report_fd = s.conn.watchers_end;
        auto fail_start = [&](const Error& e) {
            if (report_fd >= 0) write_report(report_fd, e);
            quit(e);
        };
        if (s.net.parents_end >= 0) ::close(s.net.parents_end);                                                // 1
        if (s.conn.parents_end >= 0) ::close(s.conn.parents_end);
        if (kind.takes_stdio) {                                                                                // 2
            for (std::size_t fd = 0; fd <= 2; ++fd)
                if (::dup2(s.stdio->fd[fd], static_cast<int>(fd)) != static_cast<int>(fd)) quit_silently();
            if (::setsid() < 0) quit_silently();
        }
        if (s.tenant_netns >= 0 && (fault::fail("setns") || ::setns(s.tenant_netns, CLONE_NEWNET) != 0))      // 3
            fail_start(fail(Exit::internal, std::string("cannot join the tenant's empty network namespace: ") + std::strerror(errno)));
        if (tenant.limits != nullptr && !apply_rlimits(*tenant.limits))                                        // 4
            fail_start(fail(Exit::internal, "cannot set the tenant's limits"));
        // A one-off jail is the tenant's work, as its tmux panes are
        // (helper/stub/oom_preload.cpp): the OOM killer takes it before the
        // session jail's tmux server and attach jails (0). Written as root
        // (the tenant's side is not dumpable: its /proc/self is root's).
        if (s.kind == JailKind::one_off && !raise_oom_score())
            fail_start(fail(Exit::internal, "cannot raise the one-off jail's oom_score_adj"));
        // The connection channel (a waiting jail's) as fd 3, the network
        // channel (an isolated jail's) and the session jail's report next:
        // each first copied above all three numbers (none overwrites
        // another), then put in place; everything above them closed.
        int net_fd = s.net.watchers_end;
        int conn_fd = s.conn.watchers_end;
        int ready_fd = s.ready_fd;
        {                                                                                                      // 5
            ::closelog();  // glibc's socket goes too, and is forgotten (else it would close a reused number)
            int place = 3;
            for (int* fd : {&conn_fd, &net_fd, &ready_fd})
                if (*fd >= 0 && (*fd = ::fcntl(*fd, F_DUPFD, 6)) < 0) quit_silently();
            for (int* fd : {&conn_fd, &net_fd, &ready_fd}) {
                if (*fd < 0) continue;
                if (::dup2(*fd, place) != place) quit_silently();
                *fd = place++;
            }
            if (report_fd >= 0) report_fd = conn_fd;
            if (::syscall(SYS_close_range, static_cast<unsigned>(place), ~0U, 0U) != 0) quit_silently();
            ::openlog("clihost-jail", LOG_PID, LOG_AUTHPRIV);
        }
        std::vector<UniqueFd> jails;                                                                           // 6
        if (tenant.place != nullptr) {
            auto opened = tenant.place->apply();
            if (!opened) fail_start(opened.error());
            jails = std::move(opened).value();
        }
        run_as_tenant(
            s.plan->creds, self, SIGHUP,                                                                       // 7
            [&] { return watch_jail(WatchOrder{*s.plan, s.kind, ready_fd, net_fd, conn_fd, &jails}); },
            [&](const Error& e) noexcept {
                if (report_fd >= 0) write_report(report_fd, e);
            });
    }();
    quit_silently();
}

Result<WaitingOneOff> start_oneoff_jail(const Plan& plan, const TenantContext& tenant) {
    const bool isolated = plan.net == JailNet::isolated;
    const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!null.valid()) return fail(Exit::internal, "cannot open /dev/null");
    int conn[2] = {-1, -1};
    int chan[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, conn) != 0) return fail(Exit::internal, "socketpair failed");
    WaitingOneOff w;
    w.conn.reset(conn[0]);
    UniqueFd conn_theirs(conn[1]);
    if (isolated && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0)
        return fail(Exit::internal, "socketpair failed");
    w.net.reset(chan[0]);
    UniqueFd net_theirs(chan[1]);
    auto start = OneOffJailStart::make(plan, Stdio{{null.get(), null.get(), null.get()}},
                                       isolated ? std::optional(NetHandoff{net_theirs.get(), w.net.get()}) : std::nullopt,
                                       ConnHandoff{conn_theirs.get(), w.conn.get()});
    if (!start) return start.error();
    auto pid = start_jail(start.value(), tenant);
    if (!pid) return pid.error();
    w.watcher = pid.value();
    return w;  // the watcher's ends (theirs) are the watcher's alone now
}

Result<int> run_trial_jail(const Plan& plan, const TenantCreds* net) {
    const bool isolated = plan.net == JailNet::isolated;
    if (isolated != (net != nullptr)) return misfit("an isolated trial attaches its network, and only it");
    auto started = start_oneoff_jail(plan, TenantContext{});
    if (!started) return started.error();
    WaitingOneOff& jail = started.value();
    Status attached = ok_status();
    if (isolated) {
        auto user_net = attach_user_net(jail.net.get(), *net, kStartSeconds, nullptr);
        if (!user_net && user_net.error().message != kJailEndedEarly) attached = user_net.error();
        jail.net.reset();
    }
    // The command, on /dev/null, then the watcher's report of its start.
    const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    const std::string words = handed_words(plan);
    Status up = words.empty() ? Status(fail(Exit::internal, "the trial's command does not fit its jail")) : ok_status();
    if (up && !null.valid()) up = fail(Exit::internal, "cannot open /dev/null");
    const int stdio[3] = {null.get(), null.get(), null.get()};
    if (up && attached && !send_with_fds(jail.conn.get(), words, stdio)) up = fail(Exit::internal, "cannot hand the trial its command");
    if (up && attached) up = read_report(jail.conn.get(), kStartSeconds, "the trial jail");
    jail.conn.reset();
    // The watcher holds an isolated bwrap's gate: never SIGKILLed here;
    // with our ends closed it ends bwrap itself (send_namespaces,
    // await_connection).
    const int status = supervise(jail.watcher);
    if (!attached) return attached.error();
    if (!up) return up.error();
    return exit_status_of(status);
}

}  // namespace clihost
