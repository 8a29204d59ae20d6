// session.cpp: find, start, stop the session jail. The privileged sequence
// of a start, on one screen, is serve_session().
#include "session.hpp"

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
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>

#include "fault.hpp"
#include "launch.hpp"
#include "log.hpp"
#include "net.hpp"
#include "pam_session.hpp"
#include "request.hpp"
#include "version.hpp"

namespace clihost {
namespace {

constexpr int kLockSeconds = 30;
constexpr int kStartSeconds = 20;
constexpr int kStopSeconds = 10;

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

// Fds 0-2 on /dev/null: no caller's terminal or pipe is held open by a
// session jail (a proxy waiting for EOF, or ttyd's pty, would never see it).
bool detach_stdio() {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) return false;
    for (int fd = 0; fd <= 2; ++fd)
        if (::dup2(null, fd) != fd) return false;
    return ::close(null) == 0;
}

// The supervisor's own limits: root's own, PID 1's (never the caller's,
// never the tenant's), with no core dump (it holds PAM's data).
Rlimits baseline_rlimits() {
    Rlimits r;
    for (int i = 0; i < RLIM_NLIMITS; ++i)
        if (::prlimit(1, static_cast<__rlimit_resource>(i), nullptr, &r.lim[static_cast<std::size_t>(i)]) != 0)
            r.ok = false;
    r.lim[static_cast<std::size_t>(RLIMIT_CORE)] = {0, 0};
    return r;
}

// A clean process: root through and through (real, effective, saved ids 0,
// no supplementary groups: the caller that started it can no longer signal
// it), nothing of the caller's (fds, env, cwd, umask, signal dispositions,
// limits, keyring). KEYCTL_JOIN_SESSION_KEYRING with no name: a fresh,
// anonymous session keyring, whatever pam_keyinit (optional) does later.
Status clean_state(int keep_fd) {
    if (::setresgid(0, 0, 0) != 0 || ::setgroups(0, nullptr) != 0 || ::setresuid(0, 0, 0) != 0)
        return fail(Exit::internal, "cannot become root through and through");
    if (::chdir("/") != 0) return fail(Exit::internal, "cannot change directory to /");
    ::umask(022);
    if (!detach_stdio() || ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) != 0)
        return fail(Exit::internal, "cannot detach the supervisor");
    // Every descriptor but stdio and the start-up report.
    if (keep_fd != 3 && (::dup2(keep_fd, 3) != 3 || ::close(keep_fd) != 0))
        return fail(Exit::internal, "cannot keep the start-up report");
    if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0) return fail(Exit::internal, "cannot close the caller's descriptors");
    if (::clearenv() != 0) return fail(Exit::internal, "cannot clear the environment");
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) (void)::sigaction(sig, &dfl, nullptr);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    if (::sigaction(SIGPIPE, &ign, nullptr) != 0) return fail(Exit::internal, "cannot ignore SIGPIPE");
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    if (!apply_rlimits(baseline_rlimits())) return fail(Exit::internal, "cannot set the supervisor's limits");
    if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0)
        return fail(Exit::host, std::string("cannot join a fresh session keyring: ") + std::strerror(errno));
    return ok_status();
}

// A connection: its socket, and once its jail runs, the jail's watcher.
struct Conn {
    UniqueFd sock;
    std::time_t deadline{0};  // the handshake's, then the hang-up's grace
    pid_t watcher{-1};
    bool hung_up{false};
    std::string who;  // for the audit lines
};

constexpr int kHandshakeSeconds = 2;
constexpr int kMaxPending = 8;
constexpr int kMaxConnections = 256;

bool send_reply(int sock, const Reply& r) {
    const std::string msg = format_reply(r);
    return ::send(sock, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(msg.size());
}

// The tenant's owner, after its session jail is up.
class Owner {
public:
    Owner(const SessionStart& s, const RuntimeDir& dir, std::vector<std::string> pam_env, Rlimits limits,
          pid_t session_watcher, UniqueFd listener, bool attach_netns)
        : s_(s), dir_(dir), pam_env_(std::move(pam_env)), limits_(limits), session_(session_watcher),
          listener_(std::move(listener)), attach_netns_(attach_netns) {}

    // The event loop; returns the session jail's wait status.
    int run(int sigfd) {
        while (true) {
            if (session_ < 0 && conns_.empty()) break;
            std::vector<pollfd> p;
            p.push_back({sigfd, POLLIN, 0});
            const bool accepting = listener_.valid() && pending() < kMaxPending &&
                                   conns_.size() < static_cast<std::size_t>(kMaxConnections);
            p.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
            for (const auto& c : conns_) p.push_back({c->sock.valid() ? c->sock.get() : -1, POLLIN, 0});
            const int r = ::poll(p.data(), p.size(), timeout_ms());
            if (r < 0 && errno != EINTR) return -1;
            const std::time_t now = std::time(nullptr);
            if (r > 0 && (p[0].revents & POLLIN) != 0) on_signal(sigfd);
            if (r > 0 && (p[1].revents & POLLIN) != 0) on_accept(now);
            for (std::size_t i = 0; r > 0 && i < conns_.size() && i + 2 < p.size(); ++i)
                if (p[i + 2].fd >= 0 && p[i + 2].revents != 0) on_readable(*conns_[i], now);
            on_deadlines(now);
            conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                        [](const auto& c) { return !c->sock.valid() && c->watcher < 0; }),
                         conns_.end());
        }
        // Whatever is left of the jails (re-parented to us): killed, reaped.
        kill_remaining();
        return session_status_;
    }

private:
    int pending() const {
        int n = 0;
        for (const auto& c : conns_) n += c->watcher < 0 && c->sock.valid() ? 1 : 0;
        return n;
    }

    int timeout_ms() const {
        std::time_t next = ending_at_;
        for (const auto& c : conns_)
            if (c->deadline != 0 && (next == 0 || c->deadline < next)) next = c->deadline;
        if (next == 0) return -1;
        const std::time_t left = next - std::time(nullptr);
        return left <= 0 ? 0 : static_cast<int>(left * 1000 + 50);
    }

    void on_signal(int sigfd) {
        signalfd_siginfo si{};
        while (::read(sigfd, &si, sizeof si) == sizeof si) {
            if (si.ssi_signo == SIGCHLD) reap();
            else end_all("stopped");
        }
    }

    void reap() {
        while (true) {
            int st = 0;
            const pid_t pid = ::waitpid(-1, &st, WNOHANG);
            if (pid <= 0) return;
            if (pid == session_) {
                session_ = -1;
                session_status_ = st;
                end_all("ended");
                continue;
            }
            for (auto& c : conns_) {
                if (c->watcher != pid) continue;
                c->watcher = -1;
                const int code = exit_status_of(st);
                log::context().caller = c->who;
                log::audit("exit", "connection jail ended with status " + std::to_string(code));
                if (c->sock.valid()) {
                    // The session jail was ending as this attach arrived:
                    // a typed outcome, the front attaches to a new one.
                    (void)send_reply(c->sock.get(), code == kNoServerStatus ? Reply{ReplyKind::retry, 0, ""}
                                                                            : Reply{ReplyKind::exit, code, ""});
                    c->sock.reset();
                }
            }
        }
    }

    // The session jail ended (its last tmux session, or `stop`): nothing
    // new is accepted, every jail is ended, and the record goes, so that
    // the next connection starts a new supervisor.
    void end_all(const char* why) {
        if (ending_at_ == 0) {
            ending_at_ = std::time(nullptr) + 3;
            log::context().caller = "-";
            if (std::string(why) == "stopped") log::audit("allow", "the supervisor was asked to stop");
        }
        if (listener_.valid()) {
            listener_.reset();
            (void)::unlinkat(dir_fd(), endpoint_name(s_.tenant.account.uid).c_str(), 0);
        }
        if (attach_netns_) dir_.remove_attach_netns(s_.tenant.account.uid);
        attach_netns_ = false;
        dir_.remove_if(s_.tenant.account.uid, ::getpid());
        if (session_ > 0) ::kill(session_, SIGTERM);
        for (auto& c : conns_) {
            if (c->watcher > 0) ::kill(c->watcher, SIGHUP);
            else if (c->sock.valid()) {
                (void)send_reply(c->sock.get(), Reply{ReplyKind::retry, 0, ""});
                c->sock.reset();
            }
        }
    }

    int dir_fd() const { return dir_.fd(); }

    void on_accept(std::time_t now) {
        UniqueFd sock(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!sock.valid()) return;
        ucred cred{};
        socklen_t len = sizeof cred;
        // Only root (a front, setuid) speaks to the supervisor; the runtime
        // directory is root's 0700 already, this is the second lock.
        if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != 0) {
            log::audit("deny", "a connection to the supervisor from uid " + std::to_string(cred.uid) + " refused");
            (void)send_reply(sock.get(), Reply{ReplyKind::fail, 1, "the supervisor speaks to root only"});
            return;
        }
        auto c = std::make_unique<Conn>();
        c->sock = std::move(sock);
        c->deadline = now + kHandshakeSeconds;
        conns_.push_back(std::move(c));
    }

    void on_readable(Conn& c, std::time_t now) {
        if (c.watcher < 0) return handshake(c);
        char buf[64];
        const ssize_t n = ::recv(c.sock.get(), buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        auto relay = n > 0 ? parse_relay(std::string_view(buf, static_cast<std::size_t>(n)))
                           : Result<Relay>(Relay{true, 0});
        if (relay && !relay.value().hangup) {
            ::kill(c.watcher, relay.value().signal);
            return;
        }
        // Hang-up, the front's end (its death included), or garbage: that
        // connection's jail ends, and only it.
        c.sock.reset();
        hang_up(c, now);
    }

    void hang_up(Conn& c, std::time_t now) {
        if (c.hung_up || c.watcher < 0) return;
        c.hung_up = true;
        ::kill(c.watcher, SIGHUP);
        c.deadline = now + 3;
    }

    void handshake(Conn& c) {
        std::string msg(kMaxRequestBytes + 1, '\0');
        alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
        iovec iov{msg.data(), msg.size()};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = control;
        mh.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(c.sock.get(), &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        std::vector<UniqueFd> fds;
        for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
            const std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int fd = -1;
                std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
                fds.emplace_back(fd);
            }
        }
        if (n <= 0) {
            c.sock.reset();
            return;
        }
        msg.resize(static_cast<std::size_t>(n));
        auto refuse = [&](const Error& e) {
            log::audit(e.code == Exit::refused ? "deny" : "fail", e.message);
            (void)send_reply(c.sock.get(), Reply{ReplyKind::fail, static_cast<int>(e.code), e.message});
            c.sock.reset();
        };
        if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return refuse(fail(Exit::refused, "malformed request: too long"));
        auto req = parse_request(msg);
        if (!req) {
            if (req.error().code == Exit::host)
                return refuse(fail(Exit::host, req.error().message + ": end the session jail with clihost-jail stop --user " +
                                                   s_.tenant.account.name));
            return refuse(req.error());
        }
        const HandoverRequest& rq = req.value();
        auto& ctx = log::context();
        ctx.caller = rq.caller;
        ctx.caller_uid = rq.caller_uid;
        ctx.via = rq.via;
        ctx.session = rq.session;
        ctx.action = "run";
        c.who = rq.caller;
        if (ending_at_ != 0) {
            (void)send_reply(c.sock.get(), Reply{ReplyKind::retry, 0, ""});
            c.sock.reset();
            return;
        }
        // The descriptors, checked before use: three, and an attach's is a
        // terminal (a character device that isatty).
        if (fds.size() != 3) return refuse(fail(Exit::refused, "a request carries exactly three descriptors"));
        for (const auto& fd : fds) {
            struct stat st {};
            if (::fstat(fd.get(), &st) != 0 || S_ISDIR(st.st_mode))
                return refuse(fail(Exit::refused, "a handed-over descriptor is not usable as stdio"));
            if (rq.kind == HandoverKind::attach && (!S_ISCHR(st.st_mode) || ::isatty(fd.get()) != 1))
                return refuse(fail(Exit::refused, "an attach hands over a terminal"));
        }
        const UniqueFd netns = rq.kind == HandoverKind::attach ? dir_.open_attach_netns(s_.tenant.account.uid) : UniqueFd();
        const Request r{rq.kind == HandoverKind::attach ? JailAction::attach : JailAction::command, rq.session,
                        rq.command, netns.valid()};
        auto plan = build_plan(s_.policy, s_.tenant, r, s_.probe, rq.extra_env, pam_env_);
        if (!plan) return refuse(plan.error());
        if (plan.value().net == JailNet::isolated)
            return refuse(fail(Exit::host, "a one-off jail with network = isolated is not served by the supervisor yet"));
        const int stdio[3] = {fds[0].get(), fds[1].get(), fds[2].get()};
        auto pid = spawn_connection_jail(plan.value(), stdio, netns.get(), limits_);
        if (!pid) return refuse(pid.error());
        c.watcher = pid.value();
        c.deadline = 0;
        log::audit("allow", audit_reason(std::string(rq.kind == HandoverKind::attach ? "attach jail" : "one-off jail") +
                                             " started by supervisor " + std::to_string(::getpid()) + ", watcher " +
                                             std::to_string(pid.value()) + ", network " +
                                             std::string(jail_net_name(plan.value().net)),
                                         plan.value()));
        (void)send_reply(c.sock.get(), Reply{ReplyKind::ok, 0, ""});
    }

    void on_deadlines(std::time_t now) {
        for (auto& c : conns_) {
            if (c->deadline == 0 || c->deadline > now) continue;
            if (c->watcher < 0) {
                // A handshake that did not finish in time (a front stopped
                // by its own caller, say): closed, nothing kept.
                c->sock.reset();
                c->deadline = 0;
            } else {
                // A jail that did not end within its grace: SIGKILL.
                ::kill(c->watcher, SIGKILL);
                c->deadline = now + 3;
            }
        }
        if (ending_at_ != 0 && now >= ending_at_) {
            if (session_ > 0) ::kill(session_, SIGKILL);
            for (auto& c : conns_)
                if (c->watcher > 0) ::kill(c->watcher, SIGKILL);
            kill_remaining_children_of_self();
            ending_at_ = now + 3;
        }
    }

    static void kill_remaining_children_of_self() {
        const std::string path = "/proc/self/task/" + std::to_string(::getpid()) + "/children";
        UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd.valid()) return;
        char buf[4096];
        const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
        if (n <= 0) return;
        buf[n] = '\0';
        char* save = nullptr;
        for (char* tok = ::strtok_r(buf, " \n", &save); tok != nullptr; tok = ::strtok_r(nullptr, " \n", &save)) {
            const long pid = std::strtol(tok, nullptr, 10);
            if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
        }
    }

    // Everything still our child (re-parented to us, the subreaper, when a
    // watcher died first): SIGKILLed and reaped, so that the PAM session is
    // closed only once no process of the tenant's jails remains.
    static void kill_remaining() {
        for (int round = 0; round < 100; ++round) {
            kill_remaining_children_of_self();
            int st = 0;
            pid_t r;
            while ((r = ::waitpid(-1, &st, WNOHANG)) > 0) {}
            if (r < 0 && errno == ECHILD) return;
            ::usleep(20000);
        }
    }

    const SessionStart& s_;
    const RuntimeDir& dir_;
    std::vector<std::string> pam_env_;
    Rlimits limits_;
    pid_t session_;
    int session_status_{-1};
    UniqueFd listener_;
    bool attach_netns_;
    std::time_t ending_at_{0};
    std::vector<std::unique_ptr<Conn>> conns_;
};

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

// The supervisor: root, in a session of its own, the owner of every jail of
// the tenant, holding the tenant's PAM session for as long as its session
// jail runs. Returns its exit status. The privileged sequence, on one screen.
int serve_session(const SessionStart& s, int report_fd) {
    auto& ctx = log::context();
    ctx.action = "session";
    ctx.session = "-";
    const Account& t = s.tenant.account;
    auto failed = [&](const Error& e) {
        log::audit("fail", "session jail not started: " + e.message);
        write_report(report_fd, e);
        return static_cast<int>(e.code);
    };
    // 1. A clean state: nothing of the caller.
    if (auto st = clean_state(report_fd); !st) return failed(st.error());
    report_fd = 3;
    auto opened_dir = RuntimeDir::open();
    if (!opened_dir) return failed(opened_dir.error());
    const RuntimeDir& dir = opened_dir.value();
    // Every signal we handle arrives on a descriptor (the event loop's).
    if (auto st = block_relayed_signals(); !st) return failed(st.error());
    const sigset_t handled = relayed_signals();
    const UniqueFd sigfd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd.valid()) return failed(fail(Exit::internal, "signalfd failed"));
    //    What the policy refuses, refused before the PAM session opens.
    if (auto st = validate_request(s.policy, t, Request{JailAction::serve, "", {}}, s.probe); !st)
        return failed(st.error());
    // 2. An isolated network's prerequisites, proven (exit 3 if missing):
    //    never a jail with half of its isolation.
    std::optional<TenantCreds> net;
    if (s.policy.network == NetworkMode::isolated) {
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
    // 4. The plan, with PAM's environment.
    auto plan = build_plan(s.policy, s.tenant, Request{JailAction::serve, "", {}}, s.probe, s.caller_env, pam_env);
    if (!plan) return failed(plan.error());
    // 5. The watcher (the tenant) starts the jail and says when tmux is up;
    //    an isolated jail's network is attached before anything in it runs.
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    int chan[2] = {-1, -1};
    if (net && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0)
        return failed(fail(Exit::internal, "socketpair failed"));
    auto watcher = spawn_session_watcher(plan.value(), ready[1], chan[1], chan[0], tenant_limits);
    ::close(ready[1]);
    if (chan[1] >= 0) ::close(chan[1]);
    Status up = watcher ? ok_status() : Status(watcher.error());
    // Held until this process ends: its exit pipe ends slirp4netns with us.
    UserNet user_net;
    bool bwrap_blocked = false;
    if (up && net) {
        auto attached = attach_user_net(chan[0], *net, kStartSeconds);
        if (attached) {
            user_net = std::move(attached).value();
        } else if (attached.error().message != kJailEndedEarly) {
            up = attached.error();
            bwrap_blocked = true;
        }
    }
    if (chan[0] >= 0) ::close(chan[0]);
    if (up) up = read_report(ready[0], kStartSeconds);
    ::close(ready[0]);
    // 6. The endpoint and the record, once the jail is really up.
    SupervisorRecord rec{t.name, t.uid, ::getpid(), own_start_ticks().value_or(0), current_boot_id(),
                         static_cast<long long>(std::time(nullptr)), kRecordVersion};
    // The fault-injection build stands in for a build before the owner
    // model: a v1 record, no endpoint (test_owner_upgrade.py).
    if (fault::fail("old_record")) rec.version = 1;
    if (up && (rec.start_ticks == 0 || rec.boot_id.empty()))
        up = fail(Exit::internal, "cannot read this process's start time");
    bool attach_netns = false;
    if (up) {
        const auto made = dir.make_attach_netns(t.uid);
        attach_netns = made.ok();
        if (!made) log::audit("warn", made.error().message + "; every attach jail makes its own");
    }
    UniqueFd listener;
    if (up && rec.version == kRecordVersion) {
        auto ep = make_endpoint(dir, t.uid);
        if (ep) listener = std::move(ep).value();
        else up = ep.error();
    }
    if (up) up = dir.write(rec);
    if (!up) {
        if (attach_netns) dir.remove_attach_netns(t.uid);
        if (listener.valid()) (void)::unlinkat(dir.fd(), endpoint_name(t.uid).c_str(), 0);
        if (watcher) {
            if (!bwrap_blocked) ::kill(watcher.value(), SIGKILL);
            (void)supervise(watcher.value());
        }
        return failed(up.error());
    }
    log::audit("allow", audit_reason("session jail started, supervisor " + std::to_string(rec.pid) + ", /proc " +
                                         plan.value().proc_source + ", network " +
                                         std::string(jail_net_name(plan.value().net)) +
                                         (net ? " (slirp4netns " + std::to_string(user_net.pid) + ")" : "") +
                                         (pam ? ", PAM session open" : ", no PAM session"),
                                     plan.value()));
    write_report(report_fd, ok_status());
    ::close(report_fd);
    // 7. Serve connections until the session jail ends (its last tmux
    //    session, `stop`); then every jail ends, and PAM closes, once.
    Owner owner(s, dir, pam_env, tenant_limits, watcher.value(), std::move(listener), attach_netns);
    const int status = owner.run(sigfd.get());
    dir.remove_if(t.uid, rec.pid);
    std::string closed = pam ? ", PAM session closed" : "";
    if (pam)
        if (auto st = pam->close(); !st) closed = ", " + st.error().message;
    ctx.caller = "-";
    ctx.session = "-";
    ctx.action = "session";
    log::audit("exit", "session jail ended with status " + std::to_string(exit_status_of(status)) + closed);
    return 0;
}

// The first fork's child: a new session, then the supervisor as its child,
// so that the supervisor is no session leader (it can never acquire a
// controlling terminal) and is nobody's child but init's (or a subreaper's).
[[noreturn]] void start_supervisor(const SessionStart& s, int report_fd, int lock_fd) noexcept {
    int code = static_cast<int>(Exit::internal);
    try {
        // The tenant's lock stays with the starter, which releases it once
        // the record is written.
        ::close(lock_fd);
        if (::setsid() >= 0) {
            const pid_t pid = ::fork();
            if (pid == 0) code = serve_session(s, report_fd);
            else code = pid < 0 ? static_cast<int>(Exit::internal) : 0;
        }
    } catch (...) {
        code = static_cast<int>(Exit::internal);
    }
    ::_exit(code);
}

}  // namespace

Result<SupervisorRecord> ensure_session_jail(const SessionStart& s) {
    const uid_t uid = s.tenant.account.uid;
    auto dir = RuntimeDir::open();
    if (!dir) return dir.error();
    auto lock = dir.value().lock_tenant(uid, kLockSeconds);
    if (!lock) return lock.error();
    if (auto r = dir.value().read(uid); r && record_is_live(*r)) return *r;
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return fail(Exit::internal, "pipe failed");
    const pid_t first = ::fork();
    if (first == 0) start_supervisor(s, report[1], lock.value().get());
    ::close(report[1]);
    if (first < 0) {
        ::close(report[0]);
        return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    }
    int ignored = 0;
    while (::waitpid(first, &ignored, 0) < 0 && errno == EINTR) {}
    const Status up = read_report(report[0], kStartSeconds + 5);
    ::close(report[0]);
    if (!up) return up.error();
    auto r = dir.value().read(uid);
    if (!r || !record_is_live(*r)) return fail(Exit::internal, "the session jail started but is gone");
    return *r;
}

std::optional<SupervisorRecord> find_session_jail(uid_t uid) {
    auto dir = RuntimeDir::open();
    if (!dir) return std::nullopt;
    auto r = dir.value().read(uid);
    if (!r || !record_is_live(*r)) return std::nullopt;
    return r;
}

UniqueFd open_attach_netns(const SupervisorRecord& r) {
    auto dir = RuntimeDir::open();
    if (!dir) return UniqueFd();
    return dir.value().open_attach_netns(r.uid);
}

bool session_jail_ended(const SupervisorRecord& r, int millis) {
    const UniqueFd pidfd = open_supervisor(r);
    if (!pidfd.valid()) return true;
    pollfd p{pidfd.get(), POLLIN, 0};
    int n;
    while ((n = ::poll(&p, 1, millis)) < 0 && errno == EINTR) {}
    return n == 1;
}

std::vector<SupervisorRecord> live_session_jails() {
    std::vector<SupervisorRecord> out;
    auto dir = RuntimeDir::open();
    if (!dir) return out;
    for (auto& r : dir.value().all())
        if (record_is_live(r)) out.push_back(std::move(r));
    return out;
}

Result<bool> stop_session_jail(uid_t uid) {
    auto dir = RuntimeDir::open();
    if (!dir) return dir.error();
    auto lock = dir.value().lock_tenant(uid, kLockSeconds);
    if (!lock) return lock.error();
    auto r = dir.value().read(uid);
    if (!r) return false;
    const UniqueFd pidfd = open_supervisor(*r);
    if (!pidfd.valid()) {
        // A record left by a crash or a reboot: not trusted, not followed.
        // What its supervisor would have removed goes with it.
        dir.value().remove_attach_netns(uid);
        dir.value().remove_if(uid, r->pid);
        return false;
    }
    // The supervisor relays SIGTERM: bwrap dies, its pid namespace with it,
    // then PAM is closed and the record removed.
    if (!signal_pidfd(pidfd.get(), SIGTERM)) return fail(Exit::internal, "cannot signal the session jail's supervisor");
    if (!wait_pidfd(pidfd.get(), kStopSeconds)) {
        // Its watcher hears of its death (parent-death signal) and ends the jail.
        (void)signal_pidfd(pidfd.get(), SIGKILL);
        (void)wait_pidfd(pidfd.get(), 2);
        dir.value().remove_attach_netns(uid);
        dir.value().remove_if(uid, r->pid);
        log::audit("warn", "the session jail's supervisor did not end within " + std::to_string(kStopSeconds) +
                               " s and was killed");
    }
    return true;
}

}  // namespace clihost
