// watcher.cpp: the watcher (the tenant, after the drop). May make the tmux
// socket directory, start bwrap through bwrap_exec, pass an isolated jail's
// namespaces to its root parent, wait on bwrap, and report; it never acts
// as root. What differs by kind is read from traits_of(kind).
// Size: the one waiting process of every kind of jail, its steps in the
// order a jail meets them (socket directory, bwrap's start, the network's
// hand-off, an attach's connection, tmux's start, the end and its relay).
#include "proc/watcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <span>

#include "base/fd_pass.hpp"
#include "base/unique_fd.hpp"
#include "decide/tenant_output.hpp"
#include "priv/privdrop.hpp"
#include "proc/bwrap_exec.hpp"
#include "proc/net.hpp"
#include "proc/probe.hpp"
#include "proc/supervise.hpp"

namespace clihost {
namespace {

// How long a session jail may take to start its tmux server.
constexpr int kStartSeconds = 10;

// Opens (creating if absent) one directory level without following symlinks,
// and checks it is the tenant's.
Result<UniqueFd> open_own_dir(int parent, const char* name, const std::string& shown, uid_t uid, bool private_dir) {
    if (::mkdirat(parent, name, 0700) != 0 && errno != EEXIST)
        return fail(Exit::refused, "cannot create " + shown + ": " + std::strerror(errno));
    UniqueFd fd(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid())
        return fail(Exit::refused, shown + (errno == ELOOP || errno == ENOTDIR ? " is a symlink or not a directory"
                                                                            : ": " + std::string(std::strerror(errno))));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail(Exit::internal, "cannot stat " + shown);
    if (st.st_uid != uid) return fail(Exit::refused, shown + " is not owned by the tenant");
    if (private_dir && (st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0)
        return fail(Exit::refused, "cannot make " + shown + " private");
    return fd;
}


// After bwrap exited 1: did the command run (an "exit-code" status line)
// or did bwrap fail to set the jail up (its own "bwrap: ..." line is on the
// caller's stderr already)?
bool bwrap_setup_failed(int status, int status_read_fd) {
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) return false;
    std::string text;
    char buf[512];
    ssize_t n;
    while (text.size() < 8192 && ((n = ::read(status_read_fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) text.append(buf, static_cast<std::size_t>(n));
    return text.find("\"exit-code\"") == std::string::npos;
}

// bwrap's own first "bwrap: ..." line, from its stderr captured in a memfd.
std::string bwrap_message(int memfd) {
    char buf[512];
    const ssize_t n = ::pread(memfd, buf, sizeof buf - 1, 0);
    if (n <= 0) return {};
    std::string text(buf, static_cast<std::size_t>(n));
    if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
    return text;
}

// Connects to the tmux socket `socket` (a path that fits a sockaddr_un:
// plan.cpp checks its length) and returns 0 or the errno. As the tenant:
// root never connects to a path in a tenant's home. Non-blocking: nothing
// here waits on the tenant (a full backlog is EAGAIN: a server that exists).
int connect_tmux_socket(const std::string& socket) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket.size() >= sizeof addr.sun_path) return ENAMETOOLONG;
    std::memcpy(addr.sun_path, socket.c_str(), socket.size() + 1);
    const UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) return errno;
    return ::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
}

bool server_answers(const std::string& socket) {
    const int r = connect_tmux_socket(socket);
    return r == 0 || r == EAGAIN;
}

// An attach jail's stderr, written to a memfd rather than the terminal, as
// its tmux client said it (at most 64 KiB): the client writes there only
// the one line that says why it could not attach, before it exits.
std::string attach_stderr(int memfd) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while (text.size() < 65536 && (n = ::pread(memfd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0)
        text.append(buf, static_cast<std::size_t>(n));
    return text;
}

// What a tmux client says, and all it says, when the server it was to
// attach to has just exited (-N: it starts none): "no server running on
// SOCKET" (ECONNREFUSED: an exiting tmux leaves its socket file). Any other
// error, such as "error connecting to SOCKET (No such file or directory)"
// when the tenant swapped its socket directory away, is the client's to
// show, and ends the connection as before.
bool says_no_server(const std::string& said, const std::string& socket) {
    return said == "no server running on " + socket + "\n";
}

// Polls until the session jail's tmux server accepts connections on its
// socket, or bwrap exits, or the deadline passes. As the tenant.
Status wait_for_server(const std::string& socket, pid_t bwrap, int stderr_memfd) {
    if (socket.size() >= sizeof(sockaddr_un::sun_path)) return fail(Exit::refused, "home path too long for a tmux socket");
    const auto deadline = std::time(nullptr) + kStartSeconds;
    while (std::time(nullptr) <= deadline) {
        siginfo_t info{};
        // WNOWAIT: the status stays for supervise() to reap.
        if (::waitid(P_PID, static_cast<id_t>(bwrap), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == bwrap) {
            const std::string said = bwrap_message(stderr_memfd);
            return fail(Exit::host, "the session jail ended during start-up" + (said.empty() ? "" : ": " + said));
        }
        if (server_answers(socket)) return ok_status();
        ::usleep(5000);
    }
    return fail(Exit::host, "the session jail's tmux server did not start within " + std::to_string(kStartSeconds) + " s");
}

// The jail child's pid, from bwrap's --info-fd JSON ({"child-pid": N, ...}),
// or 0 if bwrap ended (end of file) or said nothing within the deadline.
pid_t read_child_pid(int info_fd) {
    const auto got = read_until(info_fd, '}', 4096, kStartSeconds);
    if (got.text.find('}') == std::string::npos) return 0;  // cut short: bwrap ended, or the deadline
    const std::string& text = got.text;
    const auto key = text.find("\"child-pid\":");
    if (key == std::string::npos) return 0;
    const long pid = std::strtol(text.c_str() + key + 12, nullptr, 10);
    return pid > 1 ? static_cast<pid_t>(pid) : 0;
}

// The stub's answer to a query ("exit N"), to the supervisor: false if
// the stub ended instead (its jail is then ending).
bool relay_answer(int stub_fd, int conn_fd) {
    Received said = receive_with_fds(stub_fd, kMaxStubAnswer);
    if (said.n <= 0 || said.truncated || !said.fds.empty()) return false;
    (void)send_with_fds(conn_fd, said.data, {}, MSG_DONTWAIT);
    return true;
}

// A waiting jail's connection: what its supervisor sends once a front has
// handed its descriptors over (owner.cpp: the command's words and three
// descriptors). What it waits for: that message, or bwrap's end, or the
// supervisor's (end of file: no connection comes). Meanwhile the
// supervisor may ask a query of an attach jail (query.hpp: one at a time,
// its words and two descriptors), which goes to the stub, and the stub's
// answer back. With a connection, the front's stderr becomes ours (an
// attach's relay of the jail's stderr goes there, and a one-off's
// failures), and the words and the first `handed` descriptors go to the
// stub (an attach's terminal, two; a one-off's stdio, three); the answer
// to a query asked before is still relayed. Returns whether a connection
// came.
bool await_connection(int conn_fd, int stub_fd, pid_t bwrap, std::size_t handed) {
    const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, bwrap, 0)));
    bool asked = false;  // a query went to the stub, and its answer has not come back
    bool stub_gone = false;  // the stub's end closed unasked: bwrap failed, its end follows
    while (true) {
        pollfd p[3] = {{conn_fd, POLLIN, 0}, {stub_gone ? -1 : stub_fd, POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
        while (::poll(p, pidfd.valid() ? 3 : 2, -1) < 0)
            if (errno != EINTR) return false;
        if (p[1].revents != 0) {
            if (asked) {
                if (!relay_answer(stub_fd, conn_fd)) return false;
                asked = false;
                continue;
            }
            stub_gone = true;
        }
        // A connection sent before bwrap ended still goes in (its front then
        // hears why the jail ended); bwrap's end alone: none comes.
        if ((p[0].revents & (POLLIN | POLLHUP)) == 0) {
            if (p[2].revents != 0 || !pidfd.valid()) return false;
            continue;
        }
        Received got = receive_with_fds(conn_fd, kMaxHandedBytes + kQueryWord.size());
        if (got.n <= 0 || got.truncated) return false;
        if (std::string_view(got.data).substr(0, kQueryWord.size()) == kQueryWord) {
            if (asked || got.fds.size() != 2) return false;
            const int pass[2] = {got.fds[0].get(), got.fds[1].get()};
            if (!send_with_fds(stub_fd, got.data, pass)) return false;
            asked = true;
            continue;
        }
        if (got.fds.size() != 3) return false;
        if (::dup2(got.fds[2].get(), 2) != 2) return false;
        // The stub takes them as its stdin, stdout (and stderr; an attach's
        // stderr is our capture); a stub already gone (bwrap failed) reads
        // nothing, and its status and bwrap's message tell the front why.
        const int pass[3] = {got.fds[0].get(), got.fds[1].get(), got.fds[2].get()};
        (void)send_with_fds(stub_fd, got.data, std::span<const int>(pass, handed));
        if (asked) {
            // The stub answers the query before it reads the connection; the
            // supervisor stops waiting for that answer at its deadline.
            pollfd q[3] = {{stub_fd, POLLIN, 0}, {conn_fd, POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
            int r;
            while ((r = ::poll(q, pidfd.valid() ? 3 : 2, -1)) < 0 && errno == EINTR) {}
            if (r > 0 && q[0].revents != 0) (void)relay_answer(stub_fd, conn_fd);
        }
        return true;
    }
}

// The jail's resolv.conf, or a data file of its plan, as bwrap
// --ro-bind-data reads it (from offset 0).
UniqueFd resolv_conf_fd(const std::string& text) {
    UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-data", MFD_CLOEXEC)));
    if (!fd.valid()) return fd;
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::lseek(fd.get(), 0, SEEK_SET) != 0)
        fd.reset();
    return fd;
}
// The plan's data files (kDataFd on), each in a memfd of its own.
Status data_fds(const Plan& plan, std::array<UniqueFd, kMaxDataFiles>& data, JailFds& fds) {
    if (plan.data.size() > data.size()) return fail(Exit::internal, "too many data files in the jail's plan");
    for (std::size_t i = 0; i < plan.data.size(); ++i) {
        data[i] = resolv_conf_fd(plan.data[i].text);
        if (!data[i].valid()) return fail(Exit::internal, "cannot prepare " + plan.data[i].dest);
        fds.data[i] = data[i].get();
    }
    return ok_status();
}

}  // namespace

Status prepare_socket_dir(const std::string& home_path, uid_t uid) {
    UniqueFd home(::open(home_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!home.valid()) return fail(Exit::refused, "cannot open home " + home_path);
    auto cache = open_own_dir(home.get(), ".cache", home_path + "/.cache", uid, false);
    if (!cache) return cache.error();
    auto tmux = open_own_dir(cache.value().get(), "tmux", home_path + "/.cache/tmux", uid, true);
    if (!tmux) return tmux.error();
    return ok_status();
}

// Its parent's death (even by SIGKILL) reaches it as SIGHUP, which it
// relays like any other: bwrap dies, and whatever bwrap leaves (a sandbox
// still being set up, not yet armed with --die-with-parent) is re-parented
// to the watcher and SIGKILLed. For the session jail it first makes the
// socket directory and reports on `ready_fd` once the tmux server is up.
int watch_jail(const WatchOrder& order) {
    const Plan& plan = order.plan;
    const JailTraits kind = traits_of(order.kind);
    // The session jail reports its start on ready_fd, a waiting jail on
    // its connection channel (until its connection comes: then on the
    // front's stderr, which is ours).
    int ready_fd = order.ready_fd >= 0 ? order.ready_fd : order.conn_fd;
    const int net_fd = order.net_fd;
    // The kind's factory checked it: a channel exactly when the plan is isolated.
    const bool isolated = net_fd >= 0;
    auto failed = [&](const Error& e) {
        if (ready_fd >= 0) write_report(ready_fd, e);
        else report_tenant_failure(e);
        return static_cast<int>(e.code);
    };
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return failed(fail(Exit::internal, "cannot set up the jail's watcher"));
    if (auto st = prove_private_proc(plan); !st) return failed(st.error());
    UniqueFd stderr_memfd;
    const std::string socket = plan.socket_dir + "/clihost.sock";
    // A waiting jail's stderr: bwrap's own message, written before a
    // connection came (said to the one-off's front, below); an attach
    // jail's tmux client may find that the server went away (below).
    if (kind.waits) {
        stderr_memfd.reset(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-stderr", MFD_CLOEXEC)));
        if (!stderr_memfd.valid()) return failed(fail(Exit::internal, "memfd_create failed"));
    }
    if (kind.serves_tmux) {
        if (auto st = prepare_socket_dir(plan.home, plan.creds.uid); !st) return failed(st.error());
        // A socket left by a server that was SIGKILLed would answer nothing;
        // one of a server still running somehow would answer for us. Neither.
        if (::unlink(socket.c_str()) != 0 && errno != ENOENT)
            return failed(fail(Exit::refused, "cannot remove the stale tmux socket " + socket));
        stderr_memfd.reset(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-stderr", MFD_CLOEXEC)));
        if (!stderr_memfd.valid()) return failed(fail(Exit::internal, "memfd_create failed"));
    }
    // A one-off jail shares the caller's terminal session; so would the
    // watcher, and a jail process could join the watcher's process group
    // (setpgid works within a session) and stop it with kill(0, SIGSTOP).
    // So the watcher leaves for a session of its own once bwrap's child is
    // in the terminal's, and the child starts bwrap only after that.
    int go[2] = {-1, -1};
    int status[2] = {-1, -1};
    const bool reports_status = kind.reports_status;
    // A jail its supervisor started is in a session of its own already
    // (start_jail): the caller's terminal is not its controlling
    // terminal, and nothing is left to leave.
    const bool leave_session = !kind.own_session && ::getsid(0) != ::getpid();
    if (leave_session && ::pipe2(go, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    if (reports_status && ::pipe2(status, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    // An isolated jail: bwrap says its child's pid on `info` and waits on
    // `block` until our root parent has attached the network (net.hpp).
    int info[2] = {-1, -1};
    int block[2] = {-1, -1};
    UniqueFd resolv;
    if (isolated) {
        if (::pipe2(info, O_CLOEXEC) != 0 || ::pipe2(block, O_CLOEXEC) != 0)
            return failed(fail(Exit::internal, "pipe failed"));
        resolv = resolv_conf_fd(plan.resolv_conf);
        if (!resolv.valid()) return failed(fail(Exit::internal, "cannot prepare the jail's resolv.conf"));
    }
    // The plan's data files (kDataFd on).
    std::array<UniqueFd, kMaxDataFiles> data;
    JailFds fds{status[1], info[1], block[0], -1, -1};
    if (auto st = data_fds(plan, data, fds); !st) return failed(st.error());
    // A waiting jail: the stub's end of its connection, as kAttachFd.
    UniqueFd stub_ours, stub_theirs;
    if (kind.waits) {
        int sp[2] = {-1, -1};
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
            return failed(fail(Exit::internal, "socketpair failed"));
        stub_ours.reset(sp[0]);
        stub_theirs.reset(sp[1]);
    }
    BwrapChild starting;
    // A gated jail's bwrap reads the gate (--block-fd); the gate's other
    // end stays open here (inherited, close-on-exec) as well as in our root
    // parent until both are done with the jail: bwrap reads end of file as
    // the go-ahead, and it comes only once every process of the jail is gone.
    fds.resolv = resolv.get();
    fds.attach = stub_theirs.get();
    auto started =
        start_bwrap_child(starting, plan, ::getpid(), kind.own_session, stderr_memfd.get(), go[0], fds, order.jails);
    // The child has its copies (a descriptor table of its own): ours, which
    // could move any process into the tenant's cgroup, go now.
    if (order.jails != nullptr) order.jails->clear();
    if (!started) return failed(started.error());
    const pid_t bwrap = started.value();
    if (reports_status) ::close(status[1]);
    const UniqueFd status_read(status[0]);
    const UniqueFd info_read(info[0]);
    UniqueFd block_write(block[1]);
    if (isolated) {
        ::close(info[1]);
        ::close(block[0]);
        resolv.reset();
        // A bwrap that died before reading the go-ahead must not kill us
        // with SIGPIPE: we report instead (bwrap has its own dispositions).
        if (::signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
            ::kill(bwrap, SIGKILL);
            (void)supervise(bwrap);
            return failed(fail(Exit::internal, "cannot ignore SIGPIPE"));
        }
    }
    if (leave_session) {
        ::close(go[0]);
        const bool left = ::setsid() >= 0 && ::write(go[1], "g", 1) == 1;
        ::close(go[1]);
        if (!left) {
            ::kill(bwrap, SIGKILL);
            (void)supervise(bwrap);
            return failed(fail(Exit::internal, "the jail's watcher cannot leave the caller's session"));
        }
    }
    // The child reports its own failure here, as the tenant, as a forked
    // child did itself; it exits with that error's code, which supervise
    // returns below.
    if (auto exec = await_bwrap_exec(starting); !exec) {
        // A waiting jail's supervisor hears it before any connection is
        // handed over (no front to tell yet).
        if (!kind.waits) report_tenant_failure(exec.error());
        else {
            write_report(ready_fd, exec.error());
            (void)supervise(bwrap);
            return static_cast<int>(exec.error().code);
        }
    }
    // Our copies of the planned descriptors go now, so that bwrap's end of
    // each pipe is the only one left (end of file once it is gone).
    starting.exec.copies.clear();
    stub_theirs.reset();
    if (isolated) {
        // The jail's command starts only once its network is up: never
        // with the host's, and never before slirp4netns is attached.
        // No pid: bwrap ended before it made the jail, and the paths below
        // report that from its status. Else the namespaces go to our root
        // parent, which attaches slirp4netns and says go, or reports why not.
        const pid_t child = read_child_pid(info_read.get());
        const UniqueFd bwrap_pidfd(static_cast<int>(::syscall(SYS_pidfd_open, bwrap, 0)));
        Status attached = ok_status();
        if (child > 0 && !bwrap_pidfd.valid()) attached = fail(Exit::internal, "pidfd_open failed");
        else if (child > 0) attached = send_namespaces(net_fd, child, 2 * kStartSeconds, bwrap_pidfd.get());
        ::close(net_fd);
        const bool ended = !attached && attached.error().message == kJailEndedEarly;
        if (!attached && !ended) {
            ::kill(bwrap, SIGKILL);
            (void)supervise(bwrap);
            // Our root parent heard nothing on the network channel: it
            // reads why here (a session jail's report, a waiting jail's).
            if (ready_fd >= 0) write_report(ready_fd, attached.error());
            return static_cast<int>(attached.error().code);
        }
        // A bwrap that failed during its setup no longer reads this (EPIPE):
        // its exit status and message are reported below like any other.
        if (child > 0 && !ended) (void)!::write(block_write.get(), "g", 1);
        block_write.reset();
    }
    // A waiting jail (an isolated one with its network attached) waits,
    // set up, for its connection; none comes when its supervisor ends it
    // first (end of file) or bwrap failed: then it ends without a word (no
    // front to tell). The /proc trial's child (if this watcher made one)
    // is reaped now, not left a zombie for as long as the jail waits; then
    // the jail is ready.
    if (kind.waits) {
        reap_trial();
        write_report(ready_fd, ok_status());
        if (!await_connection(order.conn_fd, stub_ours.get(), bwrap, kind.attaches ? 2 : 3)) {
            ::kill(bwrap, SIGKILL);
            (void)supervise(bwrap);
            return kNoConnectionStatus;
        }
        // A one-off's supervisor hears that its descriptors are here: its
        // status from now on is the command's, whatever number it is.
        if (!kind.attaches) (void)::send(order.conn_fd, "taken", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
        // From now on a failure is the front's to hear, on its stderr (ours).
        ready_fd = -1;
    }
    stub_ours.reset();
    if (kind.serves_tmux) {
        const Status up = wait_for_server(socket, bwrap, stderr_memfd.get());
        write_report(ready_fd, up);
        ::close(ready_fd);
        if (!up) {
            ::kill(bwrap, SIGKILL);
            (void)supervise(bwrap);
            return static_cast<int>(up.error().code);
        }
    }
    const int st = supervise(bwrap);
    if (reports_status && bwrap_setup_failed(st, status_read.get())) {
        // A waiting jail's bwrap said why into our capture (no connection
        // had come): its first line goes to the front's stderr, as bwrap
        // wrote it to the caller's before (the line below points at it).
        if (kind.waits) {
            const std::string said = bwrap_message(stderr_memfd.get()) + "\n";
            if (said.size() > 1) (void)!::write(2, said.data(), said.size());
        }
        return failed(fail(Exit::host, "bwrap could not set up the jail (its message is above); refusing"));
    }
    if (kind.attaches) {
        // The narrower window of the race above: tmux still answered when we
        // looked, and was gone when the client connected (the tenant's last
        // shell exited just then). The client said only that there is no
        // server and ended with 1, and the socket still does not answer: as
        // for the wider window, our root parent waits for that jail to end
        // and attaches to a new one, on the same connection, and the line
        // is not shown. A client that had attached and then lost its server
        // (stop, the jail's processes killed) says so on the terminal
        // itself and ends its connection. Anything else the jail wrote to
        // stderr (bwrap's own message, or whatever the tenant made its
        // client write: detach-client -E) goes to ours escaped, each line
        // marked as the jail's (relay_jail_stderr): never a forged
        // "clihost-jail: " line, never a byte that drives the terminal. And
        // the client's status, which the tenant chooses, is mapped to 0 or
        // kClientFailedStatus, so that 1 to 4 are only ever the helper's.
        const std::string said = attach_stderr(stderr_memfd.get());
        if (exit_status_of(st) == 1 && says_no_server(said, socket) && !server_answers(socket)) return kNoServerStatus;
        const std::string relayed = relay_jail_stderr(said);
        if (!relayed.empty()) (void)!::write(2, relayed.data(), relayed.size());
        return attach_client_status(exit_status_of(st));
    }
    return exit_status_of(st);
}

}  // namespace clihost
