// owner.cpp: the supervisor's event loop (owner.hpp).
// Size: one class, the event loop of every jail of a tenant (accept, handshake,
// relay, reap, end); its parts read in the order a connection meets them.
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
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>

#include "base/fault.hpp"
#include "base/fd_pass.hpp"
#include "base/log.hpp"
#include "decide/plan.hpp"
#include "decide/request.hpp"
#include "proc/jail_start.hpp"
#include "proc/supervise.hpp"
#include "decide/tenant_output.hpp"
#include "proc/query.hpp"

namespace clihost {
namespace {

// A connection: its socket, and once its jail runs, the jail's watcher
// (or, for a query, the query jail).
struct Conn {
    UniqueFd sock;
    std::time_t deadline{0};  // the handshake's, then the hang-up's grace
    pid_t watcher{-1};
    HandoverKind kind{HandoverKind::attach};
    bool hung_up{false};
    bool killed{false};   // we SIGKILLed its watcher (a grace or the teardown ran out)
    log::AuditContext ctx;  // its request's, for every audit line about it
    std::string session;
    UserNet net;          // an isolated one-off's slirp4netns, held while it runs
    UniqueFd chan;        // a one-off's channel to its watcher, which says "taken" there once it has the descriptors
    std::unique_ptr<RunningQuery> query;  // a query's jail, until answered and reaped
};

constexpr int kHandshakeSeconds = 2;
// How long a supervisor started for a one-off (no session jail) waits for
// its first connection.
constexpr int kFirstConnectionSeconds = 5;
constexpr int kMaxPending = 8;
constexpr int kMaxConnections = 256;

// A jail's slirp4netns, ended with its jail and reaped before the jail's
// status goes out: no process of the tenant outlives the jail's reply.
void end_user_net(UserNet& net) {
    if (net.pid > 0) {
        ::kill(net.pid, SIGKILL);
        int st = 0;
        while (::waitpid(net.pid, &st, 0) < 0 && errno == EINTR) {}
    }
    net = UserNet{};
}

bool send_message(int sock, const std::string& msg, bool last) {
    const bool sent = ::send(sock, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(msg.size());
    // "ok": the connection goes on, and what the front sent meanwhile (a
    // signal held from before the jail's start) is still to be read.
    if (!last) return sent;
    // A last reply: what the front sent and we did not read (a relayed
    // signal, a second hang-up) is drained: a socket closed with unread
    // data resets its peer, which then never reads this reply.
    char buf[256];
    for (int i = 0; i < 64 && ::recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {}
    return sent;
}

bool send_reply(int sock, const Reply& r) { return send_message(sock, format_reply(r), r.kind != ReplyKind::ok); }

// Whether a one-off jail's watcher said "taken" (watcher.cpp): its start-up
// report was read before, so any message now is that one.
bool said_taken(int chan) {
    char buf[16];
    return chan >= 0 && ::recv(chan, buf, sizeof buf, MSG_DONTWAIT) > 0;
}

// A waiting jail's connection, to its watcher (watcher.cpp:
// await_connection): the command's words and the front's three descriptors.
bool send_connection(int chan, const std::string& words, const std::vector<UniqueFd>& fds) {
    if (fault::fail("pause_before_send")) ::sleep(2);  // tests: a jail that ends before its connection
    const int pass[3] = {fds[0].get(), fds[1].get(), fds[2].get()};
    return send_with_fds(chan, words, pass, MSG_DONTWAIT);
}

// The session name and command a waiting jail is prepared with: any valid
// ones (its bwrap argv names neither; the connection's own go in the
// handed words).
constexpr const char* kPreparedSession = "prepared";
constexpr const char* kPreparedCommand = "/bin/true";

// A connection's words, descriptors and its plan's bwrap argv, for a jail
// started for it.
struct Handed {
    const std::string& words;
    const std::vector<UniqueFd>& fds;
    const std::vector<std::string>& argv;
};

// The next attach's jail, or the next one-off's, started before its
// connection (its watcher waits on `chan`), and the bwrap argv it was
// started with.
struct Prepared {
    pid_t watcher{-1};
    UniqueFd chan;
    bool ready{false};  // its watcher said "ok" (bwrap started) on `chan`
    std::vector<std::string> argv;
    UserNet net;  // an isolated one-off's slirp4netns, attached before it said "ok"
};

// How long a waiting jail may take to start bwrap.
constexpr int kWaitingStartSeconds = 10;
// How long after an attach the next attach jail is started, and after a
// one-off (unless it ends sooner) the next one-off jail.
constexpr std::chrono::milliseconds kPrepareDelay{50};
// How often the OOM count is read again after an OOM event (on_oom_event).
constexpr int kOomCheckMs = 100;

// The supervisor's own lines (a stop, a jail prepared, a child reaped)
// name no request: its own action, no caller.
log::AuditContext supervisor_context() {
    log::AuditContext own = log::context();
    own.action = "supervise";
    own.caller = "-";
    own.caller_uid = -1;
    own.via = "-";
    own.session = "-";
    return own;
}

// The tenant's owner.
class Owner {
public:
    Owner(OwnerContext ctx, SessionJail&& session, UniqueFd listener)
        : c_(std::move(ctx)), session_(session.watcher), session_net_(std::move(session.net)),
          listener_(std::move(listener)), own_(supervisor_context()) {
        end_.session_ran = session_ > 0;
        if (session_ < 0) idle_until_ = std::time(nullptr) + kFirstConnectionSeconds;
        else c_.dir.mark_session_jail(uid(), ::getpid(), true);
    }

    // The event loop.
    OwnerEnd run(int sigfd) {
        while (true) {
            // Each event is logged in its own context: a request's lines
            // set theirs (handshake, reap), and nothing carries over.
            log::context() = own_;
            if (session_ < 0 && conns_.empty() && (ending_at_ != 0 || std::time(nullptr) >= idle_until_)) break;
            std::vector<pollfd> p;
            p.push_back({sigfd, POLLIN, 0});
            const bool accepting = listener_.valid() && pending() < kMaxPending &&
                                   conns_.size() < static_cast<std::size_t>(kMaxConnections);
            p.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
            // Each connection's socket, or while its query jail runs, that
            // jail's stdout and stderr (the socket waits for the answer).
            std::vector<std::pair<Conn*, int>> by;  // p[i + 2]: (connection, -1 or the query's fd)
            for (const auto& c : conns_) {
                RunningQuery* q = c->query && !c->query->answered ? c->query.get() : nullptr;
                if (q == nullptr) {
                    p.push_back({c->sock.valid() ? c->sock.get() : -1, POLLIN, 0});
                    by.emplace_back(c.get(), -1);
                    continue;
                }
                for (const UniqueFd* fd : {&q->out, &q->err, &q->answer}) {
                    p.push_back({fd->valid() ? fd->get() : -1, POLLIN, 0});
                    by.emplace_back(c.get(), fd->get());
                }
            }
            const std::size_t rules_at = p.size();
            p.push_back({c_.rules_watch.valid() ? c_.rules_watch.get() : -1, POLLIN, 0});
            p.push_back({c_.oom_watch.valid() ? c_.oom_watch.get() : -1, POLLIN, 0});
            const int r = ::poll(p.data(), p.size(), timeout_ms());
            if (r < 0 && errno != EINTR) break;
            const std::time_t now = std::time(nullptr);
            if (r > 0 && (p[0].revents & POLLIN) != 0) on_signal(sigfd);
            if (r > 0 && (p[rules_at].revents & POLLIN) != 0) on_rules_event();
            if (r > 0 && (p[rules_at + 1].revents & POLLIN) != 0) on_oom_event();
            else if (oom_check_until_ != std::chrono::steady_clock::time_point{}) check_oom_kills();
            if (r > 0 && (p[1].revents & POLLIN) != 0) on_accept(now);
            for (std::size_t i = 0; r > 0 && i < by.size(); ++i) {
                if (p[i + 2].fd < 0 || p[i + 2].revents == 0) continue;
                if (by[i].second >= 0) on_query_readable(*by[i].first->query, by[i].second);
                else on_readable(*by[i].first, now);
            }
            on_deadlines(now);
            if (prepare_at_ && std::chrono::steady_clock::now() >= *prepare_at_) {
                prepare_at_.reset();
                // None while no session jail runs (it ended meanwhile).
                if (session_ > 0 && ending_at_ == 0)
                    if (auto st = prepare_attach(); !st)
                        log::audit("warn", "cannot prepare an attach jail: " + st.error().message);
            }
            if (prepare_oneoff_at_ && std::chrono::steady_clock::now() >= *prepare_oneoff_at_) {
                prepare_oneoff_at_.reset();
                // None once nothing keeps this supervisor (it ends with its last jail).
                if (jail_running() && ending_at_ == 0)
                    if (auto st = prepare_oneoff(); !st)
                        log::audit("warn", "cannot prepare a one-off jail: " + st.error().message);
            }
            for (auto& c : conns_) check_query(*c);
            conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                        [](const auto& c) { return !c->sock.valid() && c->watcher < 0 && !c->query; }),
                         conns_.end());
        }
        // No jail left: nothing new is accepted, the record goes; a jail
        // waiting for a connection that cannot come now ends.
        forget_prepared();
        forget_oneoff();
        close_endpoint();
        // Whatever is left of the jails (re-parented to us): killed, reaped.
        kill_remaining();
        end_.stopped = stopped_;
        end_.session_status = session_status_;
        return end_;
    }

private:
    int pending() const {
        int n = 0;
        for (const auto& c : conns_) n += c->watcher < 0 && c->sock.valid() ? 1 : 0;
        return n;
    }

    int timeout_ms() const {
        std::time_t next = ending_at_;
        if (session_ < 0 && conns_.empty() && idle_until_ != 0 && (next == 0 || idle_until_ < next)) next = idle_until_;
        for (const auto& c : conns_)
            if (c->deadline != 0 && (next == 0 || c->deadline < next)) next = c->deadline;
        int ms = -1;
        if (next != 0) {
            const std::time_t left = next - std::time(nullptr);
            ms = left <= 0 ? 0 : static_cast<int>(left * 1000 + 50);
        }
        // A query's deadline, and the next waiting jail's start, to the millisecond.
        const auto now = std::chrono::steady_clock::now();
        if (oom_check_until_ != std::chrono::steady_clock::time_point{} && (ms < 0 || ms > kOomCheckMs)) ms = kOomCheckMs;
        for (const auto& at : {prepare_at_, prepare_oneoff_at_}) {
            if (!at) continue;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*at - now).count();
            const int q = left <= 0 ? 0 : static_cast<int>(left) + 1;
            if (ms < 0 || q < ms) ms = q;
        }
        for (const auto& c : conns_) {
            if (!c->query || c->query->answered) continue;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c->query->deadline - now).count();
            const int q = left <= 0 ? 0 : static_cast<int>(left) + 1;
            if (ms < 0 || q < ms) ms = q;
        }
        return ms;
    }

    void on_query_readable(RunningQuery& q, int fd) {
        if (q.answer.valid() && fd == q.answer.get()) read_query_status(q);
        else read_query_output(q, fd);
    }

    // A query, once its jail has ended, or the waiting jail it was asked
    // of has answered (or at its deadline: "no answer"; a query jail is
    // SIGKILLed, a waiting jail still waiting is ended), answers its
    // front; the jail is forgotten once reaped.
    void check_query(Conn& c) {
        if (!c.query) return;
        RunningQuery& q = *c.query;
        if (!q.answered && (query_ready(q) || std::chrono::steady_clock::now() >= q.deadline)) {
            if (!q.reaped && q.watcher > 0) ::kill(q.watcher, SIGKILL);
            if (!q.reaped && q.asked_of > 0) {
                // Its client hangs (a tenant's tmux that does not answer):
                // the jail is of no more use. Handed to an attach meanwhile,
                // its watcher goes on once our copy is closed.
                if (q.asked_of == prepared_.watcher) {
                    forget_prepared();
                    prepare_at_ = std::chrono::steady_clock::now() + kPrepareDelay;
                }
                q.answer.reset();
                q.reaped = true;
            }
            answer(c, query_ready(q) ? query_answer(q) : QueryAnswer{});
            q.out.reset();
            q.err.reset();
        }
        if (q.answered && q.reaped) c.query.reset();
    }

    void answer(Conn& c, const QueryAnswer& a) {
        if (c.query) c.query->answered = true;
        if (c.sock.valid()) (void)send_message(c.sock.get(), format_answer(a), true);
        c.sock.reset();
    }

    void on_signal(int sigfd) {
        signalfd_siginfo si{};
        while (::read(sigfd, &si, sizeof si) == sizeof si) {
            if (si.ssi_signo == SIGCHLD) reap();
            else end_all("stopped");
        }
    }

    // nftables changed: the host-address rules proven again (net.hpp
    // host_addresses_blocked, the check of every start). Gone (a flush,
    // `systemctl stop nftables`, the package's removal), no jail of the
    // tenant runs on: its network would reach the host's own addresses.
    void on_rules_event() {
        if (!drain_rule_events(c_.rules_watch.get()) || ending_at_ != 0 || c_.net == nullptr) return;
        const Status held = host_addresses_blocked(*c_.net);
        if (held) return;
        log::context().caller.assign(1, '-');
        log::audit("warn", held.error().message + ": ending every jail of the tenant");
        c_.rules_watch.reset();
        end_all("rules gone");
    }

    // An OOM of the jails leaf: a kill (the kernel's count grew) is said in
    // an audit line and on the tenant's terminals, in words of the
    // supervisor's own (the count, memory_max): nothing the tenant names.
    void on_oom_event() {
        alignas(8) char events[4096];  // eventfd: 8 bytes; inotify: its events
        while (::read(c_.oom_watch.get(), events, sizeof events) > 0) {}
        // v1 signals the OOM before its kill is counted: the count is read
        // again every 100 ms for 2 s (kills of one OOM come one by one).
        oom_check_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        check_oom_kills();
    }

    void check_oom_kills() {
        if (std::chrono::steady_clock::now() >= oom_check_until_) oom_check_until_ = {};
        const TenantCgroup& cg = *c_.place.cgroup;
        const std::uint64_t now = cg.usage().oom_kills.value_or(c_.oom_kills);
        if (now <= c_.oom_kills) return;
        const std::uint64_t kills = now - c_.oom_kills;
        c_.oom_kills = now;
        const std::string line = oom_notice(kills, cg.resolved().memory_max);
        auto told = notify_oom(c_, line);
        log::audit("warn", std::to_string(kills) + " process(es) OOM-killed in the jails" +
                               (told ? ", told on the tenant's terminals" : ", not told: " + told.error().message));
    }

    void network_lost(int st) {
        const std::string how = WIFSIGNALED(st) ? "killed by signal " + std::to_string(WTERMSIG(st))
                                                : "exited with status " + std::to_string(exit_status_of(st));
        log::audit("warn", "the session jail's network process (slirp4netns) " + how +
                               ": the jail has no network until it is stopped and started again");
        c_.dir.mark_network_lost(uid(), ::getpid());
    }

    void reap() {
        while (true) {
            int st = 0;
            const pid_t pid = ::waitpid(-1, &st, WNOHANG);
            if (pid <= 0) return;
            log::context() = own_;
            // A slirp4netns that ended first: not to be signalled again.
            // Ended while its jail runs (its memory share's OOM kill, a
            // signal, a crash): the jail has no network now. Not restarted
            // (the jail's namespace is the watcher's to hand over): said in
            // an audit line and in `list`; `stop` and an attach start a new one.
            if (pid == session_net_.pid) {
                session_net_.pid = -1;
                if (session_ > 0) network_lost(st);
            }
            // A prepared attach jail that ended before its connection (its
            // session jail was ending, or bwrap failed): the next attach
            // prepares another. (It runs no client before its connection,
            // so it cannot have found the server gone.)
            if (pid == prepared_.watcher) {
                const int code = exit_status_of(st);
                if (code != kNoConnectionStatus)
                    log::audit("warn", "an attach jail ended before its connection, status " + std::to_string(code));
                prepared_ = Prepared{};
                continue;
            }
            // Likewise a prepared one-off jail (bwrap failed, or its
            // network could not be attached): the next one-off starts one.
            if (pid == oneoff_.net.pid) oneoff_.net.pid = -1;
            if (pid == oneoff_.watcher) {
                const int code = exit_status_of(st);
                if (code != kNoConnectionStatus)
                    log::audit("warn", "a one-off jail ended before its connection, status " + std::to_string(code));
                forget_oneoff();
                continue;
            }
            for (auto& c : conns_) {
                if (c->net.pid == pid) c->net.pid = -1;
                if (c->query && c->query->watcher == pid) {
                    c->query->reaped = true;
                    c->query->status = st;
                }
            }
            if (pid == session_) {
                session_ = -1;
                c_.dir.mark_session_jail(uid(), ::getpid(), false);
                session_status_ = st;
                end_user_net(session_net_);
                session_ended();
                continue;
            }
            for (auto& c : conns_) {
                if (c->watcher != pid) continue;
                c->watcher = -1;
                end_user_net(c->net);
                const int code = exit_status_of(st);
                log::context() = c->ctx;
                const bool oneoff = c->kind == HandoverKind::command;
                const std::string what = oneoff ? "one-off jail" : "attach jail";
                // A watcher ends with its jail's status; killed by a signal
                // we did not send (the OOM killer, root), it left none: its
                // jail ended with it, and the front is told so.
                const bool lost_watcher = WIFSIGNALED(st) && !c->killed;
                std::string lost_why;
                if (lost_watcher)
                    lost_why.append("the ").append(what).append("'s watcher was killed by signal ")
                        .append(std::to_string(WTERMSIG(st))).append(", and the jail with it");
                std::string ended = what;
                ended.append(lost_watcher ? " ended: " + lost_why : " ended with status " + std::to_string(code));
                log::audit("exit", ended);
                // The next one-off's jail, now that this one's command is
                // done with the CPUs (if it was still to come).
                if (oneoff && prepare_oneoff_at_) prepare_oneoff_at_ = std::chrono::steady_clock::now();
                end_.last_session = c->session;
                end_.last_status = code;
                if (c->sock.valid()) {
                    // The session jail was ending as this attach arrived:
                    // a typed outcome, the front attaches to a new one.
                    // Its jail ended before the connection reached it.
                    // A one-off's status is its command's, any number
                    // (75 and 76 included): whether its descriptors
                    // reached the jail, its watcher said on its channel.
                    const Reply lost{ReplyKind::fail, static_cast<int>(Exit::host),
                                     oneoff ? "the one-off jail ended before its descriptors reached it"
                                            : "the attach jail ended before its terminal reached it"};
                    Reply r{ReplyKind::exit, code, ""};
                    if (lost_watcher) r = Reply{ReplyKind::fail, static_cast<int>(Exit::internal), lost_why};
                    else if (oneoff ? !said_taken(c->chan.get()) : code == kNoConnectionStatus) r = lost;
                    else if (!oneoff && code == kNoServerStatus) r = Reply{ReplyKind::retry, 0, ""};
                    (void)send_reply(c->sock.get(), r);
                    c->sock.reset();
                }
            }
        }
    }

    // The session jail ended (its last tmux session): its attach jails end
    // with it (their clients have lost their server). One-off jails run on,
    // and so does this supervisor (a later attach starts a new session
    // jail); with none, everything ends as for `stop`.
    void session_ended() {
        forget_prepared();
        bool oneoffs = false;
        for (const auto& c : conns_) oneoffs = oneoffs || (c->watcher > 0 && c->kind == HandoverKind::command);
        if (!oneoffs || ending_at_ != 0) return end_all("ended");
        for (auto& c : conns_)
            if (c->watcher > 0 && c->kind == HandoverKind::attach) ::kill(c->watcher, SIGHUP);
    }

    void close_endpoint() {
        if (listener_.valid()) {
            listener_.reset();
            (void)::unlinkat(dir_fd(), endpoint_name(uid()).c_str(), 0);
        }
        c_.dir.remove_if(uid(), ::getpid());
    }

    uid_t uid() const { return c_.start.tenant.account.uid; }

    // A stop signal, or the session jail ended with no one-off left:
    // nothing new is accepted, every jail is ended, and the record goes, so
    // that the next connection starts a new supervisor.
    void end_all(const char* why) {
        if (ending_at_ == 0) {
            ending_at_ = std::time(nullptr) + 3;
            log::context() = own_;
            if (std::string(why) == "stopped") log::audit("allow", "the supervisor was asked to stop");
        }
        // `stop`: every process of every jail, by the jails leaf (setsid,
        // double forks, stopped processes included); the signals below
        // still go to the watchers (no cgroup on this host: they are all).
        if ((std::string(why) == "stopped" && !stopped_) || std::string(why) == "rules gone") {
            stopped_ = std::string(why) == "stopped";
            if (c_.place.cgroup != nullptr)
                if (auto st = c_.place.cgroup->kill_jails(); !st) log::audit("warn", st.error().message);
        }
        close_endpoint();
        forget_prepared();
        forget_oneoff();
        if (session_ > 0) ::kill(session_, SIGTERM);
        for (auto& c : conns_) {
            if (c->watcher > 0) ::kill(c->watcher, SIGHUP);
            // A query runs on to its answer (a kill that ended the last
            // session ends the session jail, and with it this supervisor).
            else if (c->sock.valid() && !c->query) {
                (void)send_reply(c->sock.get(), Reply{ReplyKind::retry, 0, ""});
                c->sock.reset();
            }
        }
    }

    int dir_fd() const { return c_.dir.fd(); }

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
            // INT and QUIT are a one-off's (its terminal is in cooked mode);
            // an attach's terminal is raw, its front never sends them.
            const int sig = relay.value().signal;
            if (c.kind == HandoverKind::command || (sig != SIGINT && sig != SIGQUIT)) ::kill(c.watcher, sig);
            return;
        }
        // Hang-up (SIGHUP, or SIGTERM as the front got it), the front's end
        // (its death included), or garbage: that connection's jail ends,
        // and only it. A front that asked keeps its connection for the
        // jail's status.
        if (!relay || n <= 0) c.sock.reset();
        hang_up(c, now, relay ? relay.value().signal : SIGHUP);
    }

    void hang_up(Conn& c, std::time_t now, int sig) {
        if (c.hung_up || c.watcher < 0) return;
        c.hung_up = true;
        ::kill(c.watcher, sig == SIGTERM ? SIGTERM : SIGHUP);
        c.deadline = now + 3;
    }

    void handshake(Conn& c) {
        Received got = receive_with_fds(c.sock.get(), kMaxRequestBytes, MSG_DONTWAIT);
        if (got.n < 0 && got.error == EAGAIN) return;
        const ssize_t n = got.n;
        const std::vector<UniqueFd>& fds = got.fds;
        // Only a query (list, kill) leaves a supervisor started for a
        // one-off waiting for that one-off's connection
        // (kFirstConnectionSeconds); a front that went away or was refused
        // ends the wait: with no jail, the supervisor ends now.
        if (n <= 0) {
            idle_until_ = 0;
            c.sock.reset();
            return;
        }
        const std::string& msg = got.data;
        auto refuse = [&](const Error& e) {
            idle_until_ = 0;
            log::audit(e.code == Exit::refused ? "deny" : "fail", e.message);
            (void)send_reply(c.sock.get(), Reply{ReplyKind::fail, static_cast<int>(e.code), e.message});
            c.sock.reset();
        };
        if (got.truncated) return refuse(fail(Exit::refused, "malformed request: too long"));
        auto req = parse_request(msg);
        if (!req) {
            if (req.error().code == Exit::host)
                return refuse(fail(Exit::host, req.error().message + ": end the session jail with clihost-jail stop --user " +
                                                   c_.start.tenant.account.name));
            return refuse(req.error());
        }
        const HandoverRequest& rq = req.value();
        auto& ctx = log::context();
        ctx.caller = rq.caller;
        ctx.caller_uid = rq.caller_uid;
        ctx.via = rq.via;
        ctx.session = rq.session.empty() ? "-" : rq.session;
        ctx.action = rq.kind == HandoverKind::list ? "list" : rq.kind == HandoverKind::kill ? "kill" : "run";
        c.ctx = ctx;
        c.session = rq.session;
        c.kind = rq.kind;
        if (ending_at_ != 0) {
            (void)send_reply(c.sock.get(), Reply{ReplyKind::retry, 0, ""});
            c.sock.reset();
            return;
        }
        if (is_query(rq.kind)) {
            if (!fds.empty()) return refuse(fail(Exit::refused, "a query carries no descriptors"));
            return query(c, rq);
        }
        idle_until_ = 0;  // from now on, the supervisor ends with its last jail
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
        const bool attach = rq.kind == HandoverKind::attach;
        // The tenant as the account database says now (a tenant removed
        // from the tenant group gets no terminal, whatever its front
        // checked before it was stopped), then PAM's account check, for
        // every connection (an expired tenant gets no terminal, also while
        // its session jail runs: stop ends that), before anything starts.
        if (c_.check_tenant)
            if (auto st = c_.check_tenant(); !st) return refuse(st.error());
        if (c_.check_account) {
            if (auto st = c_.check_account(rq.caller); !st) return refuse(st.error());
            if (attach) c_.dir.clear_refusals(uid());
        }
        // An attach's jail.json, and its line when the settings it runs
        // with differ from the config file now (before a session jail that
        // starts now binds the file).
        const std::string notice = attach && c_.refresh_view ? c_.refresh_view() : std::string();
        // An attach needs the session jail: started now if none runs (a
        // supervisor a one-off started, or whose session jail ended while a
        // one-off ran on).
        if (attach && session_ < 0) {
            auto started = c_.start_session ? c_.start_session() : Result<SessionJail>(fail(Exit::internal, "no session jail"));
            if (!started) return refuse(started.error());
            session_ = started.value().watcher;
            session_net_ = std::move(started.value().net);
            c_.dir.mark_session_jail(uid(), ::getpid(), true);
            end_.session_ran = true;
            ctx.session = rq.session;
            c.ctx = ctx;
            log::audit("allow", "session jail started by supervisor " + std::to_string(::getpid()) + ", watcher " +
                                    std::to_string(session_) + ", " + started.value().about + ", for an attach" +
                                    started.value().warnings);
        }
        if (auto st = hand_to_waiting_jail(c, rq, fds, notice); !st) return refuse(st.error());
        // The next connection of its kind finds its jail ready: an attach's
        // started once this one's client has drawn its screen, a one-off's
        // once this one has ended (or run a while): not on the CPUs they
        // need.
        (attach ? prepare_at_ : prepare_oneoff_at_) = std::chrono::steady_clock::now() + kPrepareDelay;
    }

    // An attach or a one-off: the connection goes to the jail prepared for
    // the next one of its kind (started now if none waits), whose bwrap
    // argv must be this connection's plan's (build_plan: neither names the
    // session, the command or the caller's variables, which go with the
    // descriptors). It is sent before the jail's start-up report is read:
    // a jail whose bwrap fails during its setup still takes it, and tells
    // the front why. A prepared jail found gone is replaced, once.
    // An attach's client shows `notice` once attached (tmux_command).
    Status hand_to_waiting_jail(Conn& c, const HandoverRequest& rq, const std::vector<UniqueFd>& fds,
                                const std::string& notice) {
        const bool attach = rq.kind == HandoverKind::attach;
        Prepared& slot = attach ? prepared_ : oneoff_;
        const std::string what = attach ? "attach jail" : "one-off jail";
        auto forget = [&] { attach ? forget_prepared() : forget_oneoff(); };
        const Request r = attach ? Request{JailAction::attach, rq.session, {}, c_.attach_netns.valid(), notice}
                                 : Request{JailAction::command, rq.session, rq.command, false};
        auto plan = build_plan(c_.start.policy, c_.start.tenant, r, c_.start.probe, rq.extra_env, c_.pam_env);
        if (!plan) return plan.error();
        const std::string words = handed_words(plan.value());
        if (words.empty()) return fail(Exit::refused, "the command and environment do not fit the " + what);
        for (int attempt = 0; attempt < 2; ++attempt) {
            // A one-off jail started now takes the connection at its start.
            const bool started_now = slot.watcher <= 0;
            const bool fresh = !attach && started_now;
            const Handed handed{words, fds, plan.value().argv};
            if (auto st = attach ? prepare_attach() : prepare_oneoff(fresh ? &handed : nullptr); !st) return st;
            if (plan.value().argv != slot.argv) return fail(Exit::internal, "the prepared " + what + " is not this connection's plan");
            if (!fresh && !send_connection(slot.chan.get(), words, fds)) {
                // One started just now has ended already: it says why.
                Status why = started_now ? why_not_taken(slot.chan.get(), what) : ok_status();
                forget();
                if (!why) return why;
                continue;
            }
            if (!slot.ready) {
                auto up = read_report(slot.chan.get(), kWaitingStartSeconds, "the " + what);
                if (!up) {
                    forget();
                    return up.error();
                }
            }
            c.watcher = slot.watcher;
            c.deadline = 0;
            c.net = std::move(slot.net);
            if (!attach) c.chan = std::move(slot.chan);
            slot = Prepared{};
            std::string said = what;
            said.append(" started by supervisor ").append(std::to_string(::getpid()));
            said.append(", watcher ").append(std::to_string(c.watcher));
            said.append(", network ").append(jail_net_name(plan.value().net));
            said.append(c_.start.policy.pam_session ? ", PAM session open" : ", no PAM session");
            if (c.net.pid > 0) said.append(" (slirp4netns ").append(std::to_string(c.net.pid)).append(")");
            log::audit("allow", audit_reason(std::move(said), plan.value()));
            (void)send_reply(c.sock.get(), Reply{ReplyKind::ok, 0, ""});
            return ok_status();
        }
        return fail(Exit::internal, "cannot hand the connection to a " + what);
    }

    // The next attach's jail: bwrap set up and its stub waiting, in the
    // tenant's empty network namespace, only while the session jail runs.
    Status prepare_attach() {
        if (prepared_.watcher > 0) return ok_status();
        if (session_ < 0 || ending_at_ != 0) return fail(Exit::internal, "no session jail to attach to");
        const Request r{JailAction::attach, kPreparedSession, {}, c_.attach_netns.valid()};
        auto plan = build_plan(c_.start.policy, c_.start.tenant, r, c_.start.probe, CallerEnv{}, c_.pam_env);
        if (!plan) return plan.error();
        const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
        if (!null.valid()) return fail(Exit::internal, "cannot open /dev/null");
        int chan[2] = {-1, -1};
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0)
            return fail(Exit::internal, "socketpair failed");
        UniqueFd ours(chan[0]);
        const UniqueFd theirs(chan[1]);
        auto start = AttachJailStart::make(plan.value(), Stdio{{null.get(), null.get(), null.get()}}, c_.attach_netns.get(),
                                           ConnHandoff{theirs.get(), ours.get()});
        if (!start) return start.error();
        auto pid = start_jail(start.value(), TenantContext{&c_.limits, &c_.place});
        if (!pid) return pid.error();
        prepared_.watcher = pid.value();
        prepared_.chan = std::move(ours);
        prepared_.argv = plan.value().argv;
        return ok_status();
    }

    // The next one-off's jail: bwrap set up (an isolated one with its
    // slirp4netns attached, while bwrap waits) and its stub waiting, while
    // this supervisor has a jail that keeps it (it is started for a
    // connection, or after one).
    // A one-off jail started for a connection (none waited) is sent it at
    // once, before its network: whatever its bwrap does meanwhile, the
    // watcher has the connection, and tells its front.
    Status prepare_oneoff(const Handed* now = nullptr) {
        if (oneoff_.watcher > 0) return ok_status();
        if (ending_at_ != 0) return fail(Exit::internal, "the supervisor is ending");
        const Request r{JailAction::command, kPreparedSession, {kPreparedCommand}, false};
        auto plan = build_plan(c_.start.policy, c_.start.tenant, r, c_.start.probe, CallerEnv{}, c_.pam_env);
        if (!plan) return plan.error();
        if (now != nullptr && plan.value().argv != now->argv)
            return fail(Exit::internal, "the one-off jail's plan is not this connection's");
        const bool isolated = plan.value().net == JailNet::isolated;
        if (isolated && c_.net == nullptr) return fail(Exit::internal, "an isolated jail needs its network's credentials");
        auto started = start_oneoff_jail(plan.value(), TenantContext{&c_.limits, &c_.place});
        if (!started) return started.error();
        const UniqueFd net_ours = std::move(started.value().net);
        oneoff_.watcher = started.value().watcher;
        oneoff_.chan = std::move(started.value().conn);
        oneoff_.argv = plan.value().argv;
        if (now != nullptr && !send_connection(oneoff_.chan.get(), now->words, now->fds)) {
            Status why = why_not_taken(oneoff_.chan.get(), "one-off jail");
            forget_oneoff();
            return why;
        }
        // Its network, attached while its bwrap waits (bounded): the stub,
        // and so the command, never runs without it. A jail that ended
        // first says why: in its start-up report, or to its front.
        if (isolated) {
            auto attached = attach_user_net(net_ours.get(), *c_.net, kWaitingStartSeconds, c_.place.cgroup);
            if (attached) oneoff_.net = std::move(attached).value();
            else if (attached.error().message != kJailEndedEarly) {
                // Ended at once, so that it tells a front it may hold nothing.
                ::kill(oneoff_.watcher, SIGKILL);
                forget_oneoff();
                return attached.error();
            }
        }
        return ok_status();
    }

    // A jail started for a connection that could not be sent it had ended
    // (its watcher failed: a drop, a limit); its start-up report, still to
    // be read on the channel, is the reason its front gets.
    static Status why_not_taken(int chan, const std::string& what) {
        if (auto up = read_report(chan, kWaitingStartSeconds, "the " + what); !up) return up.error();
        return fail(Exit::internal, "cannot hand the connection to a " + what);
    }

    // Its watcher reads our end's close as "no connection" and ends it;
    // it is reaped as any child.
    void forget_prepared() { prepared_ = Prepared{}; }
    void forget_oneoff() {
        end_user_net(oneoff_.net);
        oneoff_ = Prepared{};
    }

    // A jail that keeps this supervisor: the session jail, or a connection's.
    bool jail_running() const {
        if (session_ > 0) return true;
        for (const auto& c : conns_)
            if (c->watcher > 0) return true;
        return false;
    }

    // The waiting attach jail, if one has started (its watcher's report,
    // read here once it has come, without waiting) and answers no query.
    // A tenant at (or within a few tasks of) its tasks_max: the waiting
    // attach jail, in the jails leaf, could not fork its tmux client; a
    // query jail has an allowance of its own (JailPlacement::query).
    bool at_task_limit() const {
        constexpr std::uint64_t kMargin = 8;  // the tenant's tasks outside the leaf (slirp4netns) count too
        if (c_.place.cgroup == nullptr) return false;
        const auto max = c_.place.cgroup->resolved().tasks_max;
        const auto tasks = c_.place.cgroup->usage().tasks;
        return max && tasks && *tasks + kMargin >= *max;
    }

    bool waiting_jail_free() {
        if (prepared_.watcher <= 0 || ending_at_ != 0) return false;
        for (const auto& c : conns_)
            if (c->query && !c->query->reaped && c->query->asked_of == prepared_.watcher) return false;
        if (prepared_.ready) return true;
        pollfd p{prepared_.chan.get(), POLLIN, 0};
        if (::poll(&p, 1, 0) != 1) return false;
        if (auto up = read_report(prepared_.chan.get(), 1, "the attach jail"); !up) {
            log::audit("warn", "an attach jail did not start: " + up.error().message);
            forget_prepared();
            return false;
        }
        prepared_.ready = true;
        return true;
    }

    // list, kill: asked of the session jail's tmux by a tmux client in a
    // jail of ours (query.hpp): the waiting attach jail's, when one has
    // started and answers no other query, else a query jail's; answered
    // when the client has ended. A supervisor with no session jail (only
    // one-off jails) has no tmux to ask: no session, nothing to kill.
    void query(Conn& c, const HandoverRequest& rq) {
        if (session_ < 0) {
            QueryAnswer a;
            a.kind = rq.kind == HandoverKind::list ? QueryAnswer::Kind::sessions : QueryAnswer::Kind::no_session_jail;
            return answer(c, a);
        }
        if (!at_task_limit() && waiting_jail_free()) {
            auto asked = ask_waiting_jail(c_, rq.kind, rq.session, prepared_.chan.get(), prepared_.watcher);
            if (asked) {
                c.query = std::make_unique<RunningQuery>(std::move(asked).value());
                c.deadline = 0;
                return;
            }
            // Not asked (its watcher gone, say): a query jail answers.
            log::audit("warn", asked.error().message);
            forget_prepared();
        }
        auto q = start_query(c_, rq.kind, rq.session);
        if (!q) {
            log::audit("fail", q.error().message);
            return answer(c, QueryAnswer{});
        }
        c.query = std::make_unique<RunningQuery>(std::move(q).value());
        c.deadline = 0;
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
                c->killed = true;
                c->deadline = now + 3;
            }
        }
        if (ending_at_ != 0 && now >= ending_at_) {
            if (session_ > 0) ::kill(session_, SIGKILL);
            for (auto& c : conns_) {
                if (c->watcher > 0) {
                    ::kill(c->watcher, SIGKILL);
                    c->killed = true;
                }
                if (c->query && !c->query->reaped && c->query->watcher > 0) ::kill(c->query->watcher, SIGKILL);
            }
            kill_remaining_children();
            ending_at_ = now + 3;
        }
    }

    // Everything still our child (re-parented to us, the subreaper, when a
    // watcher died first): SIGKILLed and reaped, so that the PAM session is
    // closed only once no process of the tenant's jails remains.
    // At most 2 s, looked at every millisecond: a SIGKILLed child is gone
    // in well under one (a jail prepared for the next connection among them).
    static void kill_remaining() {
        for (int round = 0; round < 2000; ++round) {
            kill_remaining_children();
            int st = 0;
            pid_t r;
            while ((r = ::waitpid(-1, &st, WNOHANG)) > 0) {}
            if (r < 0 && errno == ECHILD) return;
            ::usleep(1000);
        }
    }

    OwnerContext c_;
    bool stopped_{false};
    pid_t session_;
    UserNet session_net_;
    int session_status_{-1};
    UniqueFd listener_;
    std::time_t ending_at_{0};
    std::time_t idle_until_{0};
    OwnerEnd end_;
    std::vector<std::unique_ptr<Conn>> conns_;
    Prepared prepared_;
    std::optional<std::chrono::steady_clock::time_point> prepare_at_;
    std::chrono::steady_clock::time_point oom_check_until_{};  // zero: no OOM count to read again
    Prepared oneoff_;
    std::optional<std::chrono::steady_clock::time_point> prepare_oneoff_at_;
    log::AuditContext own_;
};

}  // namespace

OwnerEnd serve_connections(OwnerContext ctx, SessionJail session, UniqueFd listener, int sigfd) {
    Owner owner(std::move(ctx), std::move(session), std::move(listener));
    return owner.run(sigfd);
}

}  // namespace clihost
