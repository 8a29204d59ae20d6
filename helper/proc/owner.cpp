// owner.cpp: the supervisor's event loop (owner.hpp).
#include "proc/owner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "base/log.hpp"
#include "decide/plan.hpp"
#include "decide/request.hpp"

namespace clihost {
namespace {

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
    const bool sent = ::send(sock, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(msg.size());
    // What the front sent and we did not read (a relayed signal, a second
    // hang-up) is drained: a socket closed with unread data resets its
    // peer, which then never reads this reply.
    char buf[256];
    for (int i = 0; i < 64 && ::recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {}
    return sent;
}

// The tenant's owner, after its session jail is up.
class Owner {
public:
    Owner(const SessionStart& s, const RuntimeDir& dir, std::vector<std::string> pam_env, Rlimits limits,
          const JailPlacement& place, pid_t session_watcher, UniqueFd listener, bool attach_netns)
        : s_(s), dir_(dir), pam_env_(std::move(pam_env)), limits_(limits), place_(place), session_(session_watcher),
          listener_(std::move(listener)), attach_netns_(attach_netns) {}

    bool stopped() const { return stopped_; }

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
            log::context().caller.assign(1, '-');
            if (std::string(why) == "stopped") log::audit("allow", "the supervisor was asked to stop");
        }
        // `stop`: every process of every jail, by the jails leaf (setsid,
        // double forks, stopped processes included); the signals below
        // still go to the watchers (no cgroup on this host: they are all).
        if (std::string(why) == "stopped" && !stopped_) {
            stopped_ = true;
            if (place_.cgroup != nullptr)
                if (auto st = place_.cgroup->kill_jails(); !st) log::audit("warn", st.error().message);
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
        // connection's jail ends, and only it. A front that asked keeps
        // its connection for the jail's status.
        if (!relay || n <= 0) c.sock.reset();
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
        auto pid = spawn_connection_jail(plan.value(), stdio, netns.get(), limits_, &place_);
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
            kill_remaining_children();
            ending_at_ = now + 3;
        }
    }

    // Everything still our child (re-parented to us, the subreaper, when a
    // watcher died first): SIGKILLed and reaped, so that the PAM session is
    // closed only once no process of the tenant's jails remains.
    static void kill_remaining() {
        for (int round = 0; round < 100; ++round) {
            kill_remaining_children();
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
    JailPlacement place_;
    bool stopped_{false};
    pid_t session_;
    int session_status_{-1};
    UniqueFd listener_;
    bool attach_netns_;
    std::time_t ending_at_{0};
    std::vector<std::unique_ptr<Conn>> conns_;
};

}  // namespace

int serve_connections(const SessionStart& s, const RuntimeDir& dir, std::vector<std::string> pam_env,
                      Rlimits limits, const JailPlacement& place, pid_t session_watcher, UniqueFd listener,
                      bool attach_netns, int sigfd, bool& stopped) {
    Owner owner(s, dir, std::move(pam_env), limits, place, session_watcher, std::move(listener), attach_netns);
    const int status = owner.run(sigfd);
    stopped = owner.stopped();
    return status;
}

}  // namespace clihost
