// launch.cpp: fork/exec/wait. Linear on purpose: every step checked.
// Size: it still serves every kind of jail through one watcher (watch_jail);
// the typed jail description (issue 22, item 7) is to split it.
#include "proc/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/fault.hpp"
#include "base/log.hpp"
#include "proc/net.hpp"
#include "proc/probe.hpp"
#include "decide/proc_decision.hpp"
#include "priv/seccomp_filter.hpp"
#include "decide/tenant_output.hpp"
#include "base/unique_fd.hpp"

namespace clihost {
namespace {

// How long a waiting process gives a relayed signal to end its child before
// it SIGKILLs it: bwrap dies at once on any of them, so only a stopped or
// wedged process is still there after this.
constexpr int kGraceSeconds = 3;
// How long a session jail may take to start its tmux server.
constexpr int kStartSeconds = 10;

std::vector<char*> c_strings(const std::vector<std::string>& v) {
    std::vector<char*> out;
    out.reserve(v.size() + 1);
    for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

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


// The deferred host probe, run as the tenant right before bwrap: refuse if
// a fresh procfs cannot be mounted here (proc = private never falls back).
// Right before bwrap, by the process that execs it (which reaps the trial's
// child, probe.hpp) or forks it (a watcher: its supervise() reaps it).
Status prove_private_proc(const Plan& plan) {
    if (!plan.trial_in_child) return ok_status();
    return judge_trial(trial_namespaces_deferred());
}

// The descriptors a jail's bwrap gets besides its seccomp program (-1: none).
struct JailFds {
    int status{-1};  // kStatusFd: --json-status-fd (one-off jails)
    int info{-1};    // kInfoFd: --info-fd (isolated jails)
    int block{-1};   // kBlockFd: --block-fd (isolated jails)
    int resolv{-1};  // kResolvFd: the jail's resolv.conf (isolated jails)
};

// Everything bwrap's exec needs, prepared (allocating, opening) before the
// last steps, which make system calls only (place_and_exec): the watcher
// runs those in a child that shares its memory (start_bwrap_child).
struct BwrapExec {
    const Plan* plan{nullptr};
    std::vector<char*> argv, envp;
    // Each planned descriptor (the seccomp program first) as a close-on-exec
    // copy above every target number, and its target: a source may sit on
    // another one's target (with no syslog socket open, a pipe can be fd 3,
    // which the seccomp program takes).
    std::vector<UniqueFd> copies;
    std::vector<std::pair<int, int>> place;  // {copy, target}
    bool fault_exec{false};
};

// The steps of place_and_exec (and of the watcher's child) that can fail.
enum ExecStep : int { kStepNone = 0, kStepTie, kStepGroup, kStepGo, kStepStderr, kStepCloexec, kStepPlace,
                      kStepSignals, kStepExec };

Error exec_step_error(const Plan& plan, int step, int err) {
    switch (step) {
        case kStepTie: return fail(Exit::internal, "cannot tie the jail to its parent");
        case kStepGroup: return fail(Exit::internal, "cannot give the jail a process group of its own");
        case kStepGo: return fail(Exit::internal, "the jail's watcher did not start");
        case kStepStderr: return fail(Exit::internal, "cannot redirect the jail's stderr");
        case kStepCloexec: return fail(Exit::internal, "cannot mark descriptors close-on-exec");
        case kStepPlace: return fail(Exit::internal, "cannot place bwrap's descriptors");
        case kStepSignals: return fail(Exit::internal, "cannot reset signal dispositions");
        case kStepExec: return fail(Exit::host, "cannot execute " + plan.bwrap + ": " + std::strerror(err));
        default: return fail(Exit::internal, "the jail's start failed");
    }
}

Result<BwrapExec> prepare_bwrap_exec(const Plan& plan, const JailFds& fds) {
    BwrapExec x;
    x.plan = &plan;
    x.argv = c_strings(plan.argv);
    x.envp = c_strings(plan.env);
    x.fault_exec = fault::fail("exec");
    auto program = seccomp_program_fd();
    if (!program) return program.error();
    const std::pair<int, int> wanted[] = {{program.value().get(), kSeccompFd}, {fds.status, kStatusFd},
                                          {fds.info, kInfoFd}, {fds.block, kBlockFd}, {fds.resolv, kResolvFd}};
    for (const auto& [fd, at] : wanted) {
        if (fd < 0) continue;
        UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, kResolvFd + 1));
        if (!copy.valid()) return fail(Exit::internal, "cannot place bwrap's descriptors");
        x.place.emplace_back(copy.get(), at);
        x.copies.push_back(std::move(copy));
    }
    return x;
}

// The last steps before bwrap: system calls only, no allocation (the
// watcher's child runs them in the watcher's memory). Returns the step that
// failed, with errno in `err`; on success it does not return.
int place_and_exec(const BwrapExec& x, int& err) noexcept {
    err = 0;
    // Descriptors opened since start-up (syslog, PAM modules, NSS) must not
    // reach the jail: mark every fd above 2 close-on-exec.
    if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0) return kStepCloexec;
    // dup2 leaves the target without close-on-exec.
    for (const auto& [copy, at] : x.place)
        if (::dup2(copy, at) != at || ::fcntl(at, F_SETFD, 0) != 0) return kStepPlace;
    // The helper ignored these for itself (sanitize_process, the waiting
    // parents); the jail gets the default dispositions back, and starts
    // with nothing blocked (sanitize_process cleared the caller's mask;
    // only the supervisors blocked the relayed signals since).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGXFSZ, SIGTTOU, SIGTTIN, SIGTSTP, SIGPIPE})
        if (::sigaction(sig, &dfl, nullptr) != 0) return kStepSignals;
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return kStepSignals;
    if (x.fault_exec) {
        err = ENOEXEC;  // the injected failure (tests): as an exec the kernel refused
        return kStepExec;
    }
    ::execve(x.plan->bwrap.c_str(), x.argv.data(), x.envp.data());
    err = errno;
    return kStepExec;
}

// Already the tenant: hand exactly the planned descriptors to bwrap and exec it.
Error exec_bwrap(const Plan& plan, const JailFds& fds = {}) {
    auto x = prepare_bwrap_exec(plan, fds);
    if (!x) return x.error();
    int err = 0;
    const int step = place_and_exec(x.value(), err);
    return exec_step_error(plan, step, err);
}

// A one-off jail on the caller's terminal leaves the process group of the
// helper's waiting processes, and takes the terminal's foreground with it
// when the helper had it. A jail that shares a process group with a waiting
// process can stop it with kill(0, SIGSTOP): process-group signals are not
// confined by the pid namespace.
bool leave_process_group() {
    const bool foreground = ::isatty(0) == 1 && ::tcgetpgrp(0) == ::getpgrp();
    if (::setpgid(0, 0) != 0) return false;
    if (!foreground) return true;
    // tcsetpgrp from what is now a background group raises SIGTTOU unless blocked.
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    if (::sigprocmask(SIG_BLOCK, &ttou, &old) != 0) return false;
    const bool moved = ::tcsetpgrp(0, ::getpid()) == 0;
    return ::sigprocmask(SIG_SETMASK, &old, nullptr) == 0 && moved;
}

// Blocks until the watcher says it has left the caller's session (one byte).
bool await_watcher(int fd) {
    char c = 0;
    ssize_t n;
    while ((n = ::read(fd, &c, 1)) < 0 && errno == EINTR) {}
    return n == 1;
}

// The bwrap child of a watcher (already the tenant), started vfork-style:
// clone(CLONE_VM) shares the watcher's memory until the child's execve
// instead of copying it (a fork copied the whole address space the root
// parent had built, PAM modules included: most of a fork's cost). Not
// CLONE_VFORK: a one-off jail's child waits for the watcher to leave the
// caller's session (below), so the watcher runs meanwhile; it writes
// nothing the child reads until the child has exec'd (await_bwrap_exec).
// The child makes system calls only: everything it needs is prepared
// first (BwrapExec), and what went wrong is sent back on a close-on-exec
// pipe (errno is shared with the watcher: the child reads it only for the
// exec's error, while the watcher is blocked reading that pipe).
//
// It dies with the watcher until bwrap's own --die-with-parent is armed. A
// session jail gets a session of its own; a one-off jail stays on the
// caller's terminal in a process group of its own, and waits until the
// watcher has left the terminal's session (see watch_jail) before anything
// of the jail runs.
struct BwrapChild {
    BwrapExec exec;
    pid_t watcher{-1};
    bool own_session{false};
    int stderr_fd{-1}, go_fd{-1};
    int err_write{-1};  // by number: the watcher closes its own copy after the clone
    UniqueFd err_read;  // end of file here: the child's write end closed in its execve
};

// Reports the failed step to the watcher; returns the child's exit status.
// The child never calls a noreturn function (_exit): it returns from
// bwrap_child_main, and clone() ends it with the exit system call (a
// sanitizer cannot follow a noreturn call on a stack it did not make).
int bwrap_child_fails(const BwrapChild& c, int step, int err) noexcept {
    const int msg[2] = {step, err};
    (void)!::write(c.err_write, msg, sizeof msg);
    return static_cast<int>(step == kStepExec ? Exit::host : Exit::internal);
}

// The child: system calls only, on its own stack, in the watcher's memory.
int bwrap_child_main(void* arg) noexcept {
    const BwrapChild& c = *static_cast<const BwrapChild*>(arg);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != c.watcher)
        return bwrap_child_fails(c, kStepTie, 0);
    if (c.own_session ? ::setsid() < 0 : !leave_process_group()) return bwrap_child_fails(c, kStepGroup, 0);
    if (c.go_fd >= 0 && !await_watcher(c.go_fd)) return bwrap_child_fails(c, kStepGo, 0);
    if (c.stderr_fd >= 0 && ::dup2(c.stderr_fd, 2) != 2) return bwrap_child_fails(c, kStepStderr, 0);
    int err = 0;
    const int step = place_and_exec(c.exec, err);
    return bwrap_child_fails(c, step, err);
}

// Prepares everything the child needs and starts it. Returns its pid, or
// the error (nothing started).
Result<pid_t> start_bwrap_child(BwrapChild& c, const Plan& plan, pid_t watcher, int stderr_fd, int go_fd,
                                const JailFds& fds) {
    auto exec = prepare_bwrap_exec(plan, fds);
    if (!exec) return exec.error();
    c.exec = std::move(exec).value();
    c.watcher = watcher;
    c.own_session = plan.own_session;
    c.stderr_fd = stderr_fd;
    c.go_fd = go_fd;
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) return fail(Exit::internal, "cannot prepare the jail's start");
    c.err_read.reset(err[0]);
    // Above every number the child places a descriptor on.
    const UniqueFd err_write(::fcntl(err[1], F_DUPFD_CLOEXEC, kResolvFd + 1));  // ours closes on return
    ::close(err[1]);
    if (!err_write.valid()) return fail(Exit::internal, "cannot prepare the jail's start");
    c.err_write = err_write.get();
    // The child's stack: one per watcher, used by one child only.
    alignas(16) static char stack[64 * 1024];
    const int pid = fault::fail("fork_bwrap") ? -1 : ::clone(bwrap_child_main, stack + sizeof stack, CLONE_VM | SIGCHLD, &c);
    if (pid < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    return static_cast<pid_t>(pid);
}

// Blocks until the child has exec'd bwrap (ok) or failed; its failure is
// the error it reported (it exits with that error's code). Until this
// returns, the watcher must not write memory the child reads.
Status await_bwrap_exec(BwrapChild& c) {
    int msg[2] = {0, 0};
    std::size_t got = 0;
    while (got < sizeof msg) {
        const ssize_t n = ::read(c.err_read.get(), reinterpret_cast<char*>(msg) + got, sizeof msg - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got == 0) return ok_status();  // end of file: the close-on-exec pipe closed in execve
    return exec_step_error(*c.exec.plan, got == sizeof msg ? msg[0] : kStepNone, msg[1]);
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
    std::string text;
    const auto deadline = std::time(nullptr) + kStartSeconds;
    while (text.find('}') == std::string::npos && text.size() < 4096) {
        const auto left = deadline - std::time(nullptr);
        pollfd p{info_fd, POLLIN, 0};
        const int r = left < 0 ? 0 : ::poll(&p, 1, static_cast<int>(left * 1000 + 100));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        char buf[512];
        const ssize_t n = ::read(info_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        text.append(buf, static_cast<std::size_t>(n));
    }
    const auto key = text.find("\"child-pid\":");
    if (key == std::string::npos) return 0;
    const long pid = std::strtol(text.c_str() + key + 12, nullptr, 10);
    return pid > 1 ? static_cast<pid_t>(pid) : 0;
}

// The jail's resolv.conf, as bwrap --ro-bind-data reads it (from offset 0).
UniqueFd resolv_conf_fd(const std::string& text) {
    UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-resolv", MFD_CLOEXEC)));
    if (!fd.valid()) return fd;
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::lseek(fd.get(), 0, SEEK_SET) != 0)
        fd.reset();
    return fd;
}

// The watcher, between a root process and bwrap: the tenant, unprivileged,
// not dumpable, a subreaper. Its parent's death (even by SIGKILL) reaches
// it as SIGHUP, which it relays like any other: bwrap dies, and whatever
// bwrap leaves (a sandbox still being set up, not yet armed with
// --die-with-parent) is re-parented to the watcher and SIGKILLed.
// For the session jail it first makes the socket directory and reports on
// `ready_fd` once the tmux server is up. Returns its exit status.
int watch_jail(const Plan& plan, int ready_fd, int net_fd) {
    const bool session = plan.action == JailAction::serve;
    const bool isolated = plan.net == JailNet::isolated;
    auto failed = [&](const Error& e) {
        if (ready_fd >= 0) write_report(ready_fd, e);
        else report_tenant_failure(e);
        return static_cast<int>(e.code);
    };
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return failed(fail(Exit::internal, "cannot set up the jail's watcher"));
    if (auto st = prove_private_proc(plan); !st) return failed(st.error());
    UniqueFd stderr_memfd;
    const std::string socket = plan.socket_dir + "/clihost.sock";
    // An attach found the session jail by its supervisor's record, and that
    // jail may be ending (the tenant's last shell just exited: tmux is gone,
    // its supervisor not yet; tmux leaves its socket file, which then
    // refuses connections). Then no client starts (it could only say "no
    // server running"): our root parent waits for that jail to end and
    // attaches to a new one (do_attach). Silent: nothing failed yet. Any
    // other answer (a socket directory the tenant swapped away, say) is the
    // client's to meet, as before.
    if (plan.action == JailAction::attach && connect_tmux_socket(socket) == ECONNREFUSED) {
        reap_trial();
        return kNoServerStatus;
    }
    // An attach jail's stderr too: its tmux client may find that the server
    // went away after the check above (below).
    if (plan.action == JailAction::attach) {
        stderr_memfd.reset(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-stderr", MFD_CLOEXEC)));
        if (!stderr_memfd.valid()) return failed(fail(Exit::internal, "memfd_create failed"));
    }
    if (session) {
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
    const bool reports_status = plan.reports_status;
    // A jail its supervisor started is in a session of its own already
    // (spawn_connection_jail): the caller's terminal is not its controlling
    // terminal, and nothing is left to leave.
    const bool leave_session = !session && ::getsid(0) != ::getpid();
    if (leave_session && ::pipe2(go, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    if (reports_status && ::pipe2(status, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    // An isolated jail: bwrap says its child's pid on `info` and waits on
    // `block` until our root parent has attached the network (net.hpp).
    int info[2] = {-1, -1};
    int block[2] = {-1, -1};
    UniqueFd resolv;
    if (isolated) {
        if (net_fd < 0) return failed(fail(Exit::internal, "an isolated jail needs its network channel"));
        if (::pipe2(info, O_CLOEXEC) != 0 || ::pipe2(block, O_CLOEXEC) != 0)
            return failed(fail(Exit::internal, "pipe failed"));
        resolv = resolv_conf_fd(plan.resolv_conf);
        if (!resolv.valid()) return failed(fail(Exit::internal, "cannot prepare the jail's resolv.conf"));
    }
    BwrapChild starting;
    // A gated jail's bwrap reads the gate (--block-fd); the gate's other
    // end stays open here (inherited, close-on-exec) as well as in our root
    // parent until both are done with the jail: bwrap reads end of file as
    // the go-ahead, and it comes only once every process of the jail is gone.
    auto started = start_bwrap_child(starting, plan, ::getpid(), stderr_memfd.get(), go[0],
                                     {status[1], info[1], block[0], resolv.get()});
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
    if (auto exec = await_bwrap_exec(starting); !exec) report_tenant_failure(exec.error());
    // Our copies of the planned descriptors go now, so that bwrap's end of
    // each pipe is the only one left (end of file once it is gone).
    starting.exec.copies.clear();
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
            return static_cast<int>(attached.error().code);
        }
        // A bwrap that failed during its setup no longer reads this (EPIPE):
        // its exit status and message are reported below like any other.
        if (child > 0 && !ended) (void)!::write(block_write.get(), "g", 1);
        block_write.reset();
    }
    if (session) {
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
    if (reports_status && bwrap_setup_failed(st, status_read.get()))
        return failed(fail(Exit::host, "bwrap could not set up the jail (its message is above); refusing"));
    if (plan.action == JailAction::attach) {
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

// `parents_end`: the root parent's end of the network channel, closed here
// so that the parent's death reads as end of file on ours.
// `join_netns`: an attach jail's network namespace (the tenant's empty
// one), joined while still root, before the drop; -1 for none.
pid_t fork_watcher(const Plan& plan, int ready_fd, int net_fd, int parents_end, const Rlimits* limits = nullptr,
                   const JailPlacement* place = nullptr) {
    const pid_t self = ::getpid();
    const pid_t child = fault::fail("fork") ? -1 : ::fork();
    if (child == 0) {
        if (parents_end >= 0) ::close(parents_end);
        // The tenant's limits (pam_limits'), set while still root.
        if (limits != nullptr && !apply_rlimits(*limits)) {
            report_tenant_failure(fail(Exit::internal, "cannot set the tenant's limits"));
            ::_exit(static_cast<int>(Exit::internal));
        }
        // The tenant's cgroup (its jails leaf) and RLIMIT_NPROC = tasks_max,
        // after pam_limits' and before anything of the jail runs: everything
        // the watcher starts is in it.
        if (place != nullptr) {
            if (auto st = place->apply(); !st) {
                report_tenant_failure(st.error());
                ::_exit(static_cast<int>(st.error().code));
            }
        }
        run_as_tenant(plan.creds, self, SIGHUP, [&] { return watch_jail(plan, ready_fd, net_fd); });
    }
    return child;
}

}  // namespace

// Everything still our child once the one we wait for is gone is a remnant
// of the jail re-parented to us (we are its subreaper): bwrap's sandbox pid
// 1 whose --die-with-parent was not armed yet (bwrap killed during its
// setup), or one blocked forever after bwrap failed mid-setup. SIGKILL
// reaches a pid namespace's init from outside, and the kernel then kills
// its namespace.
void kill_remaining_children() {
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

void write_report(int fd, const Status& st) {
    std::string line = st ? std::string("ok") : "fail " + std::to_string(static_cast<int>(st.error().code)) + " " + st.error().message;
    if (line.size() > 1000) line.resize(1000);
    for (char& c : line)
        if (c == '\n') c = ' ';
    line += '\n';
    (void)!::write(fd, line.data(), line.size());
}

Status read_report(int fd, int seconds) {
    std::string line;
    const auto deadline = std::time(nullptr) + seconds;
    while (line.find('\n') == std::string::npos && line.size() < 2048) {
        const auto left = deadline - std::time(nullptr);
        pollfd p{fd, POLLIN, 0};
        const int r = left < 0 ? 0 : ::poll(&p, 1, static_cast<int>(left * 1000 + 100));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return fail(Exit::host, "the session jail did not start within " + std::to_string(seconds) + " s");
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        line.append(buf, static_cast<std::size_t>(n));
    }
    if (line.rfind("ok\n", 0) == 0) return ok_status();
    if (line.rfind("fail ", 0) == 0 && line.size() > 7) {
        const int code = line[5] - '0';
        if (code >= 1 && code <= 4 && line[6] == ' ') {
            auto msg = line.substr(7);
            if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
            return fail(static_cast<Exit>(code), msg);
        }
    }
    return fail(Exit::internal, "the session jail's start-up ended without a report");
}

sigset_t relayed_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD}) sigaddset(&set, s);
    return set;
}

sigset_t group_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGWINCH, SIGTSTP, SIGCONT}) sigaddset(&set, s);
    return set;
}

Status block_relayed_signals() {
    const sigset_t set = relayed_signals();
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    return ok_status();
}

Status prepare_socket_dir(const std::string& home_path, uid_t uid) {
    UniqueFd home(::open(home_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!home.valid()) return fail(Exit::refused, "cannot open home " + home_path);
    auto cache = open_own_dir(home.get(), ".cache", home_path + "/.cache", uid, false);
    if (!cache) return cache.error();
    auto tmux = open_own_dir(cache.value().get(), "tmux", home_path + "/.cache/tmux", uid, true);
    if (!tmux) return tmux.error();
    return ok_status();
}

void exec_jail(const Plan& plan, pid_t expected_parent) noexcept {
    run_as_tenant(plan.creds, expected_parent, SIGKILL, [&] {
        const Error e = [&] {
            // Nobody here would attach its network: it needs a watcher.
            if (plan.net == JailNet::isolated) return fail(Exit::internal, "an isolated jail cannot be exec'd directly");
            // Its argv makes no namespace: it would have the host's network.
            if (plan.net == JailNet::tenant_empty)
                return fail(Exit::internal, "a jail planned to join a namespace cannot be exec'd directly");
            // Nobody here would open its gate.
            if (auto st = prove_private_proc(plan); !st) return st.error();
            // Nobody waits here to read a one-off jail's status: bwrap's
            // --json-status-fd writes it to /dev/null.
            if (!plan.reports_status) return exec_bwrap(plan);
            const UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
            if (!null.valid()) return fail(Exit::internal, "cannot open /dev/null");
            return exec_bwrap(plan, {null.get()});
        }();
        reap_trial();  // not exec'd: no zombie of ours outlives us (init may not reap)
        report_tenant_failure(e);
        return static_cast<int>(e.code);
    });
}

int supervise(pid_t child) {
    // The terminal's signals a supervisor relays (group_signals) are waited
    // for too: blocked only in a supervisor and the watchers it starts.
    sigset_t set = relayed_signals();
    const sigset_t group = group_signals();
    for (int sig = 1; sig < NSIG; ++sig)
        if (sigismember(&group, sig) == 1) sigaddset(&set, sig);
    int status = -1;
    bool reaped = false;
    std::time_t deadline = 0;  // set once a relayed signal was passed on
    while (true) {
        // Reap whatever has exited: our child, or a descendant re-parented to us.
        bool children_left = true;
        while (true) {
            int st = 0;
            const pid_t r = ::waitpid(-1, &st, WNOHANG);
            if (r == child) {
                status = st;
                reaped = true;
            } else if (r > 0 || (r < 0 && errno == EINTR)) {
                continue;
            } else {
                children_left = !(r < 0 && errno == ECHILD);
                break;
            }
        }
        if (!children_left) break;
        if (reaped) kill_remaining_children();
        siginfo_t info{};
        int sig;
        if (deadline != 0) {
            const std::time_t left = deadline - std::time(nullptr);
            if (left <= 0) {
                // The signal was not obeyed in time (a stopped or wedged
                // process): no root process waits forever on a tenant's.
                if (!reaped) ::kill(child, SIGKILL);
                kill_remaining_children();
                deadline = std::time(nullptr) + kGraceSeconds;
                continue;
            }
            const timespec wait{left, 0};
            sig = ::sigtimedwait(&set, &info, &wait);
            if (sig < 0 && errno == EAGAIN) continue;
        } else {
            sig = ::sigwaitinfo(&set, &info);
        }
        if (sig < 0) {
            if (errno == EINTR) continue;
            // Cannot happen with a valid set; wait blocking instead of spinning.
            while (::waitpid(-1, &status, 0) > 0 || errno == EINTR) {}
            break;
        }
        // TERM/HUP (including our own parent-death SIGHUP): pass it
        // on, and wake the child should something have stopped it; bwrap
        // dies, and --die-with-parent takes the whole jail with it (what it
        // leaves behind comes to us and is SIGKILLed above).
        // WINCH/TSTP/CONT (and a one-off's INT, QUIT), relayed by a front
        // through the supervisor: to the jail's process group (the tmux
        // client re-reads its terminal's size; a one-off command gets its
        // ^C, ^\\, ^Z), as the terminal would send them to its foreground
        // group. A command that ignores its ^C keeps running.
        if (sig == SIGWINCH || sig == SIGTSTP || sig == SIGCONT || sig == SIGINT || sig == SIGQUIT) {
            if (!reaped) ::kill(-child, sig);
            continue;
        }
        if (sig != SIGCHLD && !reaped) {
            ::kill(child, sig);
            ::kill(child, SIGCONT);
            if (deadline == 0) deadline = std::time(nullptr) + kGraceSeconds;
        }
    }
    return reaped ? status : -1;
}

int exit_status_of(int status) {
    if (status == -1) return static_cast<int>(Exit::internal);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return static_cast<int>(Exit::internal);
}

Result<int> run_network_trial(const Plan& plan, const TenantCreds& net) {
    if (plan.net != JailNet::isolated || plan.action != JailAction::command)
        return fail(Exit::internal, "the network trial is an isolated one-off jail");
    if (auto st = block_relayed_signals(); !st) return st.error();
    int chan[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0)
        return fail(Exit::internal, "socketpair failed");
    UniqueFd ours(chan[0]);
    const pid_t child = fork_watcher(plan, -1, chan[1], chan[0]);
    const int fork_errno = errno;
    ::close(chan[1]);
    if (child < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(fork_errno));
    auto user_net = attach_user_net(ours.get(), net, kStartSeconds);
    ours.reset();
    // The watcher holds bwrap's gate: never SIGKILLed here; with our end of
    // the channel closed it ends bwrap itself (send_namespaces).
    const int status = supervise(child);
    if (!user_net && user_net.error().message != kJailEndedEarly) return user_net.error();
    return exit_status_of(status);
}

Result<pid_t> spawn_session_watcher(const Plan& plan, int ready_fd, int net_fd, int parents_end,
                                    const Rlimits& limits, const JailPlacement* place) {
    if (auto st = block_relayed_signals(); !st) return st.error();
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return fail(Exit::internal, "cannot become the jail's subreaper");
    const pid_t child = fork_watcher(plan, ready_fd, net_fd, parents_end, &limits, place);
    if (child < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    return child;
}

Rlimits current_rlimits() {
    Rlimits r;
    for (int i = 0; i < RLIM_NLIMITS; ++i)
        if (::getrlimit(static_cast<__rlimit_resource_t>(i), &r.lim[static_cast<std::size_t>(i)]) != 0) r.ok = false;
    return r;
}

bool apply_rlimits(const Rlimits& r) {
    if (!r.ok) return false;
    for (int i = 0; i < RLIM_NLIMITS; ++i) {
        const auto res = static_cast<__rlimit_resource_t>(i);
        rlimit want = r.lim[static_cast<std::size_t>(i)];
        if (::setrlimit(res, &want) == 0) continue;
        // Without CAP_SYS_RESOURCE (a host or container that withholds it)
        // no hard limit can be raised: lowering always works, so what is
        // set is never above `r`; what cannot be raised stays lower.
        rlimit now{};
        if (errno != EPERM || ::getrlimit(res, &now) != 0) return false;
        if (want.rlim_max > now.rlim_max) want.rlim_max = now.rlim_max;
        if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
        if (::setrlimit(res, &want) != 0) return false;
    }
    return true;
}

Result<pid_t> spawn_connection_jail(const Plan& plan, const int stdio[3], int join_netns, int net_fd,
                                    const Rlimits& limits, const JailPlacement* place) {
    if (plan.action == JailAction::serve)
        return fail(Exit::internal, "a connection jail is an attach, a one-off or a query (list, kill) jail");
    if ((plan.net == JailNet::isolated) != (net_fd >= 0))
        return fail(Exit::internal, "an isolated one-off jail hands its namespaces over, and only it");
    if ((plan.net == JailNet::tenant_empty) != (join_netns >= 0))
        return fail(Exit::internal, "an attach jail joins the tenant's empty network namespace only as planned");
    const pid_t self = ::getpid();
    const pid_t child = fault::fail("fork") ? -1 : ::fork();
    if (child != 0) {
        if (child < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
        return child;
    }
    // The child, root until run_as_tenant: the handed-over descriptors as
    // its stdio, a session of its own (the caller's terminal is never the
    // jail's controlling terminal: no TIOCSTI, no job control of the
    // caller's), the tenant's network namespace and limits, and nothing
    // else of the supervisor's (its endpoint, other connections, PAM's).
    for (int fd = 0; fd <= 2; ++fd)
        if (::dup2(stdio[fd], fd) != fd) ::_exit(static_cast<int>(Exit::internal));
    if (::setsid() < 0) ::_exit(static_cast<int>(Exit::internal));
    if (join_netns >= 0 && (fault::fail("setns") || ::setns(join_netns, CLONE_NEWNET) != 0)) {
        report_tenant_failure(fail(Exit::internal, std::string("cannot join the tenant's empty network namespace: ") +
                                                       std::strerror(errno)));
        ::_exit(static_cast<int>(Exit::internal));
    }
    if (!apply_rlimits(limits)) {
        report_tenant_failure(fail(Exit::internal, "cannot set the tenant's limits"));
        ::_exit(static_cast<int>(Exit::internal));
    }
    // The tenant's jails leaf and RLIMIT_NPROC = tasks_max, as root.
    if (place != nullptr) {
        if (auto st = place->apply(); !st) {
            report_tenant_failure(st.error());
            ::_exit(static_cast<int>(st.error().code));
        }
    }
    ::closelog();  // glibc's socket goes too, and is forgotten (else it would close a reused number)
    // An isolated jail's channel to the supervisor (net.hpp) as fd 3.
    if (net_fd >= 0 && net_fd != 3 && ::dup2(net_fd, 3) != 3) ::_exit(static_cast<int>(Exit::internal));
    const unsigned first_closed = net_fd >= 0 ? 4U : 3U;
    if (::syscall(SYS_close_range, first_closed, ~0U, 0U) != 0) ::_exit(static_cast<int>(Exit::internal));
    ::openlog("clihost-jail", LOG_PID, LOG_AUTHPRIV);
    run_as_tenant(plan.creds, self, SIGHUP, [&] { return watch_jail(plan, -1, net_fd >= 0 ? 3 : -1); });
}

int trial_jail_status(const Plan& plan) {
    // Its output is not the caller's: stdin, stdout and stderr on /dev/null.
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd <= 2; ++fd)
            if (null < 0 || ::dup2(null, fd) != fd) ::_exit(static_cast<int>(Exit::internal));
        exec_jail(plan, self);
    }
    if (pid < 0) return -1;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return exit_status_of(status);
}

std::string dropped_output(const TenantCreds& creds, const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        auto run = [&]() noexcept {
            try {
                auto a = c_strings(argv);
                char* no_env[] = {nullptr};
                ::execve(a[0], a.data(), no_env);
            } catch (...) {
            }
            return 127;
        };
        if (::dup2(fds[1], 1) != 1) ::_exit(127);
        // An unprivileged `check` has nobody to become.
        if (::geteuid() != 0) ::_exit(run());
        run_as_tenant(creds, self, SIGKILL, run);
    }
    ::close(fds[1]);
    if (pid < 0) {
        ::close(fds[0]);
        return {};
    }
    std::string out;
    char buf[256];
    ssize_t n;
    while (out.size() < 4096 && ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? out : std::string();
}

}  // namespace clihost
