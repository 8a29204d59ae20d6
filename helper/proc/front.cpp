// front.cpp: the front's side of a handover (front.hpp).
#include "proc/front.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <vector>

#include "base/fault.hpp"
#include "base/fd_pass.hpp"
#include "base/unique_fd.hpp"
#include "decide/config.hpp"
#include "proc/pty_relay.hpp"
#include "version.hpp"

namespace clihost {
namespace {

// How long the supervisor may take to say a jail started (a session jail's
// start, up to 10 s, then an isolated jail's network, up to 10 s).
constexpr int kStartSeconds = 25;
// How long, after a hang-up, until the front gives up waiting for the status.
constexpr int kHangupSeconds = 5;
// How long a query counts against ask_supervisors' window (a query jail's
// start and answer take about 50 ms on an idle 2-core host).
constexpr int kQueryYoungMs = 500;
// How long an attach or a one-off waits for room in a supervisor's backlog
// (full while it takes no connections: kMaxConnections of its own, or it is
// stopped); a blocking connect would wait for as long as that lasts.
constexpr int kConnectMs = 5000;

// `ending`: set when the endpoint is gone or refuses (its supervisor is ending).
// `query`: a query's socket (a full backlog is EAGAIN at once, and the
// socket stays non-blocking); any other waits up to kConnectMs for room.
Result<UniqueFd> connect_endpoint(const SupervisorRecord& rec, bool& ending, bool query = false) {
    const std::string runtime = CLIHOST_JAIL_RUNTIME_DIR;
    const UniqueFd dir(::open(runtime.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) return fail(Exit::host, "cannot open the runtime directory " + runtime);
    struct stat ds {};
    if (::fstat(dir.get(), &ds) != 0 || ds.st_uid != 0 || (ds.st_mode & 077) != 0)
        return fail(Exit::host, "the runtime directory " + runtime + " is not root's 0700");
    const std::string name = endpoint_name(rec.uid);
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) ending = true;
    if (ending || !S_ISSOCK(st.st_mode) || st.st_uid != 0)
        return fail(Exit::host, "the supervisor " + std::to_string(rec.pid) + " of " + rec.tenant +
                                    " has no endpoint (a socket of root's)");
    // Through the directory we opened and checked: /proc/self/fd/N/NAME.
    const std::string path = "/proc/self/fd/" + std::to_string(dir.get()) + "/" + name;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return fail(Exit::internal, "endpoint path too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // Non-blocking: a unix socket's connect to a full backlog is EAGAIN,
    // never a wait without end.
    UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!sock.valid()) return fail(Exit::internal, "socket failed");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(query ? 0 : kConnectMs);
    while (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN && std::chrono::steady_clock::now() < give_up) {
            ::usleep(10000);
            continue;
        }
        ending = err == ENOENT || err == ECONNREFUSED;
        if (err == EAGAIN && !query)
            return fail(Exit::host, "the supervisor " + std::to_string(rec.pid) + " of " + rec.tenant +
                                        " took no connection within " + std::to_string(kConnectMs / 1000) + " s");
        return fail(Exit::host, std::string("cannot reach the supervisor: ") + std::strerror(err));
    }
    if (!query) {
        const int flags = ::fcntl(sock.get(), F_GETFL);
        if (flags < 0 || ::fcntl(sock.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
            return fail(Exit::internal, "fcntl failed on the supervisor's socket");
    }
    // The listener is the recorded supervisor: root, the record's pid, and
    // that pid is still the process the record names (start time, boot).
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != 0 || cred.pid != rec.pid ||
        !record_is_live(rec))
        return fail(Exit::host, "the endpoint of " + rec.tenant + " is not its recorded supervisor's");
    return sock;
}

Status send_request(int sock, const HandoverRequest& req, const std::vector<int>& handed) {
    const int fds[3] = {handed[0], handed[1], handed[2]};
    if (!send_with_fds(sock, format_request(req), fds))
        return fail(Exit::host, std::string("cannot hand over to the supervisor: ") + std::strerror(errno));
    return ok_status();
}

// The signals a front relays (and so never obeys itself): the terminal's
// (WINCH, TSTP, CONT; a one-off's INT, QUIT) to the jail's process group;
// HUP and TERM (ttyd's hang-up, a caller's kill) end the jail with the same
// signal.
sigset_t front_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGHUP, SIGTERM, SIGWINCH, SIGINT, SIGQUIT, SIGTSTP, SIGCONT}) sigaddset(&set, s);
    return set;
}

}  // namespace

Status hold_front_signals() {
    const sigset_t set = front_signals();
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    for (int sig : {SIGTTOU, SIGTTIN})
        if (::signal(sig, SIG_IGN) == SIG_ERR) return fail(Exit::internal, "cannot ignore terminal stop signals");
    return ok_status();
}

namespace {

// The front's wait for its jail: the supervisor's replies, the signals it
// relays, and the terminal relay's bytes, in one poll loop.
class FrontWait {
public:
    FrontWait(int sock, int sigfd, HandoverKind kind, PtyRelay* relay)
        : sock_(sock), sigfd_(sigfd), kind_(kind), relay_(relay) {}

    Result<Handover> run() {
        while (true) {
            std::vector<pollfd> p = {{sock_, POLLIN, 0}, {sigfd_, POLLIN, 0}};
            if (relay_ != nullptr) relay_->want(p);
            const std::time_t left = deadline_ == 0 ? -1 : deadline_ - std::time(nullptr);
            const int r = ::poll(p.data(), p.size(), left < 0 ? -1 : static_cast<int>(left * 1000 + 50));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return fail(Exit::internal, "poll failed");
            if (r == 0) {
                if (!started_) return fail(Exit::host, "the supervisor did not start the jail within " +
                                                           std::to_string(kStartSeconds) + " s");
                return fail(Exit::internal, "the jail did not end within " + std::to_string(kHangupSeconds) +
                                                " s of the hang-up");
            }
            if ((p[1].revents & POLLIN) != 0) on_signals();
            // The caller's terminal hung up (its master closed): as for
            // ttyd's SIGHUP, the jail ends and its status is awaited.
            if (relay_ != nullptr && !relay_->on_ready(p, 2)) send_relay(Relay{true, SIGHUP});
            if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            if (auto out = on_reply(); out) return std::move(*out);
        }
    }

private:
    void send_relay(const Relay& relay) {
        const std::string msg = format_relay(relay);
        (void)::send(sock_, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (relay.hangup && !hung_) {
            hung_ = true;
            deadline_ = std::time(nullptr) + kHangupSeconds;
        }
    }

    void on_signals() {
        signalfd_siginfo si{};
        while (::read(sigfd_, &si, sizeof si) == sizeof si) {
            const int sig = static_cast<int>(si.ssi_signo);
            // INT and QUIT go to a one-off's process group (^C, ^\\ on
            // its terminal, or a caller's kill); an attach's terminal is
            // raw: the front only does not die of them.
            if ((sig == SIGINT || sig == SIGQUIT) && kind_ == HandoverKind::attach) continue;
            // The jail's terminal takes the caller's size first, then the
            // jail hears of it (its client reads the size on SIGWINCH).
            if (sig == SIGWINCH && relay_ != nullptr) (void)relay_->resize();  // a size it cannot copy: the last one stays
            send_relay(Relay{sig == SIGHUP || sig == SIGTERM, sig});
        }
    }

    // A reply of the supervisor: nullopt while the jail runs on.
    std::optional<Result<Handover>> on_reply() {
        char buf[1100];
        const ssize_t n = ::recv(sock_, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) return std::nullopt;
        // The supervisor closed without a word: it is ending (or refused
        // us for a full queue): the caller decides by its end.
        if (n <= 0 && !started_) return Result<Handover>(Handover{Handover::Kind::retry, 0});
        if (n <= 0) return Result<Handover>(fail(Exit::internal, "the supervisor ended the connection without the jail's status"));
        auto reply = parse_reply(std::string_view(buf, static_cast<std::size_t>(n)));
        if (!reply) return Result<Handover>(reply.error());
        switch (reply.value().kind) {
            case ReplyKind::ok:
                started_ = true;
                if (!hung_) deadline_ = 0;
                return std::nullopt;
            case ReplyKind::exit: return Result<Handover>(Handover{Handover::Kind::done, reply.value().code});
            case ReplyKind::retry: return Result<Handover>(Handover{Handover::Kind::retry, 0});
            case ReplyKind::fail: break;
        }
        const Error why = fail(static_cast<Exit>(reply.value().code), reply.value().message);
        // Once the jail ran, a failure is the front's to log (the
        // supervisor logged only the jail's end); before, the supervisor
        // refused in its handshake and wrote the one audit line of it.
        if (started_) return Result<Handover>(why);
        Handover h{Handover::Kind::refused, 0};
        h.why = why;
        return Result<Handover>(std::move(h));
    }

    int sock_, sigfd_;
    HandoverKind kind_;
    PtyRelay* relay_;
    bool started_{false};
    bool hung_{false};
    std::time_t deadline_{std::time(nullptr) + kStartSeconds};
};

}  // namespace

Status check_caller_stdio(HandoverKind kind) {
    for (int fd = 0; fd < 3; ++fd) {
        struct stat st {};
        if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode))
            return fail(Exit::refused, "a handed-over descriptor is not usable as stdio");
        if (kind == HandoverKind::attach && (!S_ISCHR(st.st_mode) || ::isatty(fd) != 1))
            return fail(Exit::refused, "an attach hands over a terminal");
    }
    return ok_status();
}

Result<Handover> hand_over(const SupervisorRecord& rec, const HandoverRequest& req) {
    if (auto st = hold_front_signals(); !st) return st.error();
    const sigset_t set = front_signals();
    const UniqueFd sigfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd.valid()) return fail(Exit::internal, "signalfd failed");
    bool ending = false;
    auto sock = connect_endpoint(rec, ending);
    // A record whose endpoint is gone or refuses: that supervisor is ending
    // or has ended (it closes its endpoint first). The caller waits for its end
    // and starts a new one (a typed outcome, as for a "retry" reply).
    if (!sock && ending) return Handover{Handover::Kind::retry, 0};
    if (!sock) return sock.error();
    // A jail never gets the caller's terminal: an attach, and a one-off
    // whose stdin is a terminal, get a pseudo-terminal of our own, relayed.
    std::unique_ptr<PtyRelay> relay;
    const bool attach = req.kind == HandoverKind::attach;
    if (attach || ::isatty(0) == 1) {
        auto opened = PtyRelay::open(attach ? PtyRelay::Mode::attach : PtyRelay::Mode::oneoff);
        if (!opened) return opened.error();
        relay = std::move(opened).value();
    }
    HandoverRequest sent = req;
    // The fault-injection build stands in for a front of another protocol.
    if (fault::fail("old_protocol")) sent.version = kProtocolVersion - 1;
    const std::vector<int> fds = relay ? relay->jail_fds() : std::vector<int>{0, 1, 2};
    if (auto st = send_request(sock.value().get(), sent, fds); !st) return st.error();
    // Only the jail holds the slave now: once it and the tenant's copies
    // are closed, the master reads EIO.
    if (relay) relay->close_slave();
    FrontWait wait(sock.value().get(), sigfd.get(), req.kind, relay.get());
    auto out = wait.run();
    // The jail's last output relayed, the master closed (a slave the
    // tenant kept is dead from now on), the caller's modes back, before
    // the front says anything on the caller's terminal.
    if (relay) relay->finish();
    return out;
}

std::vector<Result<QueryAnswer>> ask_supervisors(const std::vector<SupervisorRecord>& recs, const HandoverRequest& req) {
    using Clock = std::chrono::steady_clock;
    std::vector<Result<QueryAnswer>> got(recs.size(), Result<QueryAnswer>(QueryAnswer{}));
    struct Asked {
        std::size_t i;
        UniqueFd sock;
        Clock::time_point sent;
    };
    std::vector<Asked> asked;
    std::size_t next = 0;
    const std::string msg = format_request(req);
    // Each supervisor answers a list by starting a query jail (about 35 ms
    // of CPU): asked all at once, 100 of them on 2 cores took longer than
    // their deadline and half had no answer. At most `window` young
    // questions are out at a time; one older than kQueryYoungMs stops
    // counting, so a tenant whose tmux hangs holds a place for that long,
    // not for its deadline.
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    const std::size_t window = std::clamp<std::size_t>(cpus > 0 ? 2 * static_cast<std::size_t>(cpus) : 4, 4, 32);
    const auto young_for = std::chrono::milliseconds(kQueryYoungMs);
    // Each its own deadline from its question: the supervisor's own
    // (kTenantQueryDeadlineMs) and a margin for its loop.
    const auto answer_within = std::chrono::milliseconds(kTenantQueryDeadlineMs + 1000);
    const std::string late = "its supervisor did not answer within " + std::to_string(kTenantQueryDeadlineMs / 1000 + 1) + " s";
    std::string buf(kMaxAnswerBytes + 1, '\0');
    while (true) {
        auto now = Clock::now();
        std::size_t young = 0;
        for (const auto& a : asked) young += now - a.sent < young_for ? 1 : 0;
        // Each endpoint checked as an attach's front checks it; a query
        // carries no descriptors.
        for (; next < recs.size() && young < window; ++next) {
            const auto& rec = recs[next];
            bool ending = false;
            auto sock = connect_endpoint(rec, ending, true);
            if (sock && ::send(sock.value().get(), msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
                            static_cast<ssize_t>(msg.size()))
                sock = fail(Exit::host, "the supervisor " + std::to_string(rec.pid) + " of " + rec.tenant +
                                            " takes no query now");
            if (!sock) {
                got[next] = sock.error();
                continue;
            }
            asked.push_back({next, std::move(sock).value(), Clock::now()});
            ++young;
        }
        now = Clock::now();
        for (auto it = asked.begin(); it != asked.end();) {
            if (now - it->sent < answer_within) {
                ++it;
                continue;
            }
            got[it->i] = fail(Exit::host, late);
            it = asked.erase(it);
        }
        if (asked.empty() && next == recs.size()) break;
        // Wake for the first deadline, or, with questions left to ask, when
        // the first young one ages and frees its place.
        auto wake = Clock::time_point::max();
        for (const auto& a : asked) {
            wake = std::min(wake, a.sent + answer_within);
            if (next < recs.size() && now - a.sent < young_for) wake = std::min(wake, a.sent + young_for);
        }
        std::vector<pollfd> p;
        p.reserve(asked.size());
        for (const auto& a : asked) p.push_back({a.sock.get(), POLLIN, 0});
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
        const int r = ::poll(p.data(), p.size(), static_cast<int>(std::clamp<long long>(left, 0, 60000)));
        if (r < 0 && errno != EINTR) {
            for (const auto& a : asked) got[a.i] = fail(Exit::internal, "poll on the supervisors' answers failed");
            for (; next < recs.size(); ++next) got[next] = fail(Exit::internal, "poll on the supervisors' answers failed");
            return got;
        }
        for (std::size_t k = 0; r > 0 && k < p.size(); ++k) {
            if (p[k].revents == 0) continue;
            const std::size_t i = asked[k].i;
            const ssize_t n = ::recv(asked[k].sock.get(), buf.data(), buf.size(), MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            asked[k].sock.reset();
            const std::string_view m(buf.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
            if (n <= 0) {
                got[i] = fail(Exit::host, "the supervisor of " + recs[i].tenant + " closed the connection (it is ending)");
            } else if (m.substr(0, 7) == std::string_view("answer\0", 7)) {
                got[i] = parse_answer(m);
            } else if (auto reply = parse_reply(m); !reply) {
                got[i] = reply.error();
            } else if (reply.value().kind == ReplyKind::fail) {
                got[i] = fail(static_cast<Exit>(reply.value().code), reply.value().message);
            } else {
                got[i] = fail(Exit::host, "the supervisor of " + recs[i].tenant + " is ending");
            }
        }
        // Answered (or refused): its socket closed above, its place free.
        std::erase_if(asked, [](const Asked& a) { return !a.sock.valid(); });
    }
    return got;
}

}  // namespace clihost
