// launch.cpp: fork/exec/wait. Linear on purpose: every step checked.
#include "launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "fault.hpp"
#include "log.hpp"
#include "probe.hpp"
#include "proc_decision.hpp"
#include "seccomp_filter.hpp"
#include "unique_fd.hpp"

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

// The deferred host probe, run as the tenant right before bwrap: refuse if
// a fresh procfs cannot be mounted here (proc = private never falls back).
Status prove_private_proc(const Plan& plan) {
    if (!plan.trial_in_child) return ok_status();
    return judge_trial(trial_namespaces(plan.creds.uid, plan.creds.gid));
}

// status_off_seccomp_fd: bwrap's status pipe may have been opened on fd 3
// (kSeccompFd) when nothing held 3 before it, as on a host without a syslog
// socket (the audit line's socket usually takes 3). Placing the seccomp
// program on 3 first would then overwrite the pipe, and bwrap would write its
// status into the sealed program and fail ("Write to info_fd: Operation not
// permitted"): no one-off jail could start there. The pipe moves up first.
//
// Already the tenant: hand exactly the planned descriptors to bwrap and exec it.
Error exec_bwrap(const Plan& plan, int status_fd = -1) {
    // Descriptors opened since start-up (syslog, PAM modules, NSS) must not
    // reach the jail: mark every fd above 2 close-on-exec.
    if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0)
        return fail(Exit::internal, "cannot mark descriptors close-on-exec");
    const UniqueFd moved_status(status_fd == kSeccompFd ? ::fcntl(status_fd, F_DUPFD_CLOEXEC, 10) : -1);
    if (status_fd == kSeccompFd) {
        // See status_off_seccomp_fd.
        if (!moved_status.valid()) return fail(Exit::internal, "cannot place bwrap's status pipe");
        status_fd = moved_status.get();
    }
    // The one descriptor bwrap is meant to get: its seccomp program, at the
    // number the plan names (dup2 leaves the copy without close-on-exec).
    auto program = seccomp_program_fd();
    if (!program) return program.error();
    if (::dup2(program.value().get(), kSeccompFd) != kSeccompFd || ::fcntl(kSeccompFd, F_SETFD, 0) != 0)
        return fail(Exit::internal, "cannot place the seccomp program");
    // The status pipe, where the plan names it (bwrap --json-status-fd).
    if (status_fd >= 0 && (::dup2(status_fd, kStatusFd) != kStatusFd || ::fcntl(kStatusFd, F_SETFD, 0) != 0))
        return fail(Exit::internal, "cannot place bwrap's status pipe");
    // The helper ignored these for itself (sanitize_process, the waiting
    // parents); the jail gets the default dispositions back.
    for (int sig : {SIGXFSZ, SIGTTOU, SIGTTIN, SIGTSTP})
        if (::signal(sig, SIG_DFL) == SIG_ERR) return fail(Exit::internal, "cannot reset signal dispositions");
    // The jail starts with nothing blocked (sanitize_process cleared the
    // caller's mask; only the supervisors blocked the relayed signals since).
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return fail(Exit::internal, "cannot reset the signal mask");
    auto argv = c_strings(plan.argv);
    auto envp = c_strings(plan.env);
    if (!fault::fail("exec")) ::execve(plan.bwrap.c_str(), argv.data(), envp.data());
    return fail(Exit::host, "cannot execute " + plan.bwrap + ": " + std::strerror(errno));
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
// parent had built, PAM modules included; bench: most of a fork's cost).
// Not CLONE_VFORK: a one-off jail's child waits for the watcher to leave the
// caller's session (below), so the watcher must run meanwhile. It touches
// only the kernel until the child has exec'd (await_bwrap_exec), and the
// child makes system calls only: everything it needs is prepared here
// first, and what went wrong is sent back on a pipe (errno is shared with
// the watcher: the child reads it only for an EINTR retry and for the
// exec's error, when the watcher is blocked reading that pipe).
//
// It dies with the watcher until bwrap's own --die-with-parent is armed. A
// session jail gets a session of its own; a one-off jail stays on the
// caller's terminal in a process group of its own, and waits until the
// watcher has left the terminal's session (see watch_jail) before anything
// of the jail runs.
struct BwrapChild {
    const Plan* plan{nullptr};
    pid_t watcher{-1};
    int stderr_fd{-1}, go_fd{-1}, status_fd{-1};
    std::vector<char*> argv, envp;
    UniqueFd seccomp;                // the program, placed at kSeccompFd by the child
    UniqueFd status_moved;           // the status pipe moved off kSeccompFd, if it was there
    UniqueFd err_read;               // EOF here: the child's close-on-exec write end closed in execve
    int err_write{-1};               // that write end, by number (the watcher's copy is closed)
    bool fault_exec{false};
};
// The watcher writes nothing of a BwrapChild the child reads once it runs:
// they share this memory (closing the watcher's copy of a descriptor leaves
// the child's, in its own descriptor table, alone).

// The steps of the child that can fail, sent to the watcher with errno.
enum BwrapChildStep : int { kChildTie = 1, kChildGroup, kChildGo, kChildStderr, kChildCloexec, kChildSeccomp,
                            kChildStatus, kChildSignals, kChildExec };

[[noreturn]] void bwrap_child_fails(const BwrapChild& c, int step, int err) noexcept {
    const int msg[2] = {step, err};
    (void)!::write(c.err_write, msg, sizeof msg);
    ::_exit(static_cast<int>(step == kChildExec ? Exit::host : Exit::internal));
}

// The child: system calls only, on its own stack, in the watcher's memory.
int bwrap_child_main(void* arg) noexcept {
    const BwrapChild& c = *static_cast<const BwrapChild*>(arg);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != c.watcher) bwrap_child_fails(c, kChildTie, 0);
    if (c.plan->own_session ? ::setsid() < 0 : !leave_process_group()) bwrap_child_fails(c, kChildGroup, 0);
    if (c.go_fd >= 0 && !await_watcher(c.go_fd)) bwrap_child_fails(c, kChildGo, 0);
    if (c.stderr_fd >= 0 && ::dup2(c.stderr_fd, 2) != 2) bwrap_child_fails(c, kChildStderr, 0);
    // As exec_bwrap: no descriptor of the helper's reaches the jail but the
    // planned ones, the default dispositions and an empty signal mask.
    if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0) bwrap_child_fails(c, kChildCloexec, 0);
    if (::dup2(c.seccomp.get(), kSeccompFd) != kSeccompFd || ::fcntl(kSeccompFd, F_SETFD, 0) != 0)
        bwrap_child_fails(c, kChildSeccomp, 0);
    if (c.status_fd >= 0 && (::dup2(c.status_fd, kStatusFd) != kStatusFd || ::fcntl(kStatusFd, F_SETFD, 0) != 0))
        bwrap_child_fails(c, kChildStatus, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGXFSZ, SIGTTOU, SIGTTIN, SIGTSTP})
        if (::sigaction(sig, &dfl, nullptr) != 0) bwrap_child_fails(c, kChildSignals, 0);
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) bwrap_child_fails(c, kChildSignals, 0);
    if (!c.fault_exec) ::execve(c.plan->bwrap.c_str(), c.argv.data(), c.envp.data());
    bwrap_child_fails(c, kChildExec, errno);
}

// Prepares everything the child needs and starts it. Returns its pid, or
// the error (nothing started).
Result<pid_t> start_bwrap_child(BwrapChild& c, const Plan& plan, pid_t watcher, int stderr_fd, int go_fd,
                                int status_fd) {
    c.plan = &plan;
    c.watcher = watcher;
    c.stderr_fd = stderr_fd;
    c.go_fd = go_fd;
    if (status_fd == kSeccompFd) {  // see status_off_seccomp_fd (exec_bwrap)
        c.status_moved.reset(::fcntl(status_fd, F_DUPFD_CLOEXEC, 10));
        if (!c.status_moved.valid()) return fail(Exit::internal, "cannot place bwrap's status pipe");
        status_fd = c.status_moved.get();
    }
    c.status_fd = status_fd;
    c.argv = c_strings(plan.argv);
    c.envp = c_strings(plan.env);
    c.fault_exec = fault::fail("exec");
    auto program = seccomp_program_fd();
    if (!program) return program.error();
    // Above the numbers the child dup2s onto (kSeccompFd, kStatusFd).
    c.seccomp.reset(::fcntl(program.value().get(), F_DUPFD_CLOEXEC, 10));
    int err[2];
    if (!c.seccomp.valid() || ::pipe2(err, O_CLOEXEC) != 0) return fail(Exit::internal, "cannot prepare the jail's start");
    c.err_read.reset(err[0]);
    const UniqueFd err_write(::fcntl(err[1], F_DUPFD_CLOEXEC, 10));  // closed here on return, after the clone
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
// returns, the watcher must not touch memory the child uses.
Status await_bwrap_exec(BwrapChild& c) {
    int msg[2] = {0, 0};
    std::size_t got = 0;
    while (got < sizeof msg) {
        const ssize_t n = ::read(c.err_read.get(), reinterpret_cast<char*>(msg) + got, sizeof msg - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got == 0) return ok_status();  // EOF: the close-on-exec pipe closed in execve
    switch (got == sizeof msg ? msg[0] : 0) {
        case kChildTie: return fail(Exit::internal, "cannot tie the jail to its parent");
        case kChildGroup: return fail(Exit::internal, "cannot give the jail a process group of its own");
        case kChildGo: return fail(Exit::internal, "the jail's watcher did not start");
        case kChildStderr: return fail(Exit::internal, "cannot redirect the jail's stderr");
        case kChildCloexec: return fail(Exit::internal, "cannot mark descriptors close-on-exec");
        case kChildSeccomp: return fail(Exit::internal, "cannot place the seccomp program");
        case kChildStatus: return fail(Exit::internal, "cannot place bwrap's status pipe");
        case kChildSignals: return fail(Exit::internal, "cannot reset the signal mask");
        case kChildExec: return fail(Exit::host, "cannot execute " + c.plan->bwrap + ": " + std::strerror(msg[1]));
        default: return fail(Exit::internal, "the jail's start failed");
    }
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

// Polls until the session jail's tmux server accepts connections on its
// socket, or bwrap exits, or the deadline passes. As the tenant: root
// never connects to a path in a tenant's home.
Status wait_for_server(const std::string& socket, pid_t bwrap, int stderr_memfd) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket.size() >= sizeof addr.sun_path) return fail(Exit::refused, "home path too long for a tmux socket");
    std::memcpy(addr.sun_path, socket.c_str(), socket.size() + 1);
    const auto deadline = std::time(nullptr) + kStartSeconds;
    while (std::time(nullptr) <= deadline) {
        siginfo_t info{};
        // WNOWAIT: the status stays for supervise() to reap.
        if (::waitid(P_PID, static_cast<id_t>(bwrap), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == bwrap) {
            const std::string said = bwrap_message(stderr_memfd);
            return fail(Exit::host, "the session jail ended during start-up" + (said.empty() ? "" : ": " + said));
        }
        UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!s.valid()) return fail(Exit::internal, "socket failed");
        if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return ok_status();
        ::usleep(5000);
    }
    return fail(Exit::host, "the session jail's tmux server did not start within " + std::to_string(kStartSeconds) + " s");
}

// The watcher, between a root process and bwrap: the tenant, unprivileged,
// not dumpable, a subreaper. Its parent's death (even by SIGKILL) reaches
// it as SIGHUP, which it relays like any other: bwrap dies, and whatever
// bwrap leaves (a sandbox still being set up, not yet armed with
// --die-with-parent) is re-parented to the watcher and SIGKILLed.
// For the session jail it first makes the socket directory and reports on
// `ready_fd` once the tmux server is up. Returns its exit status.
int watch_jail(const Plan& plan, int ready_fd) {
    const bool session = plan.action == JailAction::serve;
    auto failed = [&](const Error& e) {
        if (ready_fd >= 0) write_report(ready_fd, e);
        else report_tenant_failure(e);
        return static_cast<int>(e.code);
    };
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return failed(fail(Exit::internal, "cannot set up the jail's watcher"));
    if (auto st = prove_private_proc(plan); !st) return failed(st.error());
    UniqueFd stderr_memfd;
    const std::string socket = plan.socket_dir + "/clihost.sock";
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
    if (!session && ::pipe2(go, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    if (reports_status && ::pipe2(status, O_CLOEXEC) != 0) return failed(fail(Exit::internal, "pipe failed"));
    BwrapChild child;
    auto started = start_bwrap_child(child, plan, ::getpid(), stderr_memfd.get(), go[0], status[1]);
    if (!started) return failed(started.error());
    const pid_t bwrap = started.value();
    if (reports_status) ::close(status[1]);
    const UniqueFd status_read(status[0]);
    if (!session) {
        ::close(go[0]);
        const bool left = ::setsid() >= 0 && ::write(go[1], "g", 1) == 1;
        ::close(go[1]);
        if (!left) {
            ::kill(bwrap, SIGKILL);
            (void)supervise(bwrap);
            return failed(fail(Exit::internal, "the jail's watcher cannot leave the caller's session"));
        }
    }
    // The child reports its own failure here, as the tenant, as it did
    // itself before; it exits with that error's code, which supervise returns.
    if (auto exec = await_bwrap_exec(child); !exec) report_tenant_failure(exec.error());
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
    return exit_status_of(st);
}

pid_t fork_watcher(const Plan& plan, int ready_fd) {
    const pid_t self = ::getpid();
    const pid_t child = fault::fail("fork") ? -1 : ::fork();
    if (child == 0) run_as_tenant(plan.creds, self, SIGHUP, [&] { return watch_jail(plan, ready_fd); });
    return child;
}

// A waiting root process must not be stopped by writing to a terminal whose
// foreground the jail took (TOSTOP), nor by the terminal's stop keys.
Status ignore_terminal_stops() {
    for (int sig : {SIGTTOU, SIGTTIN, SIGTSTP})
        if (::signal(sig, SIG_IGN) == SIG_ERR) return fail(Exit::internal, "cannot ignore terminal stop signals");
    return ok_status();
}

}  // namespace

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
            if (auto st = prove_private_proc(plan); !st) return st.error();
            // Nobody waits here to read a one-off jail's status: bwrap's
            // --json-status-fd writes it to /dev/null.
            if (!plan.reports_status) return exec_bwrap(plan);
            const UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
            if (!null.valid()) return fail(Exit::internal, "cannot open /dev/null");
            return exec_bwrap(plan, null.get());
        }();
        report_tenant_failure(e);
        return static_cast<int>(e.code);
    });
}

int supervise(pid_t child) {
    const sigset_t set = relayed_signals();
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
        // TERM/HUP/INT/QUIT (including our own parent-death SIGHUP): pass it
        // on, and wake the child should something have stopped it; bwrap
        // dies, and --die-with-parent takes the whole jail with it (what it
        // leaves behind comes to us and is SIGKILLed above).
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

Result<int> run_supervised(const Plan& plan, PamSession& pam) {
    // Block the relayed signals before forking so none is lost between fork
    // and the wait loop (block_relayed_signals did so already before PAM).
    if (auto st = block_relayed_signals(); !st) {
        (void)pam.close();
        return st.error();
    }
    if (auto st = ignore_terminal_stops(); !st) {
        (void)pam.close();
        return st.error();
    }
    // Subreaper: should the watcher die first (the tenant may kill its own
    // processes), what it leaves of the jail comes to us, so the PAM session
    // is closed only once every process of the jail is gone.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        (void)pam.close();
        return fail(Exit::internal, "cannot become the jail's subreaper");
    }
    // The jail takes the terminal's foreground (leave_process_group); the
    // caller (a shell, say) gets it back afterwards, as a shell's job
    // control would give it back, or it could no longer read its terminal.
    const bool had_foreground = ::isatty(0) == 1 && ::tcgetpgrp(0) == ::getpgrp();
    const pid_t child = fork_watcher(plan, -1);
    if (child < 0) {
        const std::string why = std::strerror(errno);
        (void)pam.close();
        return fail(Exit::internal, "fork failed: " + why);
    }
    const int status = supervise(child);
    if (had_foreground) (void)::tcsetpgrp(0, ::getpgrp());  // SIGTTOU is ignored here
    const auto closed = pam.close();
    if (!closed) log::refuse("fail", closed.error().message);
    return exit_status_of(status);
}

Result<pid_t> spawn_session_watcher(const Plan& plan, int ready_fd) {
    if (auto st = block_relayed_signals(); !st) return st.error();
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return fail(Exit::internal, "cannot become the jail's subreaper");
    const pid_t child = fork_watcher(plan, ready_fd);
    if (child < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    return child;
}

Captured capture_jail(const Plan& plan, std::size_t max) {
    Captured c;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return c;
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        // stdout to us, stderr nowhere (tmux's "no server running" is not output).
        const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (::dup2(fds[1], 1) != 1 || null < 0 || ::dup2(null, 2) != 2) ::_exit(static_cast<int>(Exit::internal));
        exec_jail(plan, self);
    }
    ::close(fds[1]);
    if (pid < 0) {
        ::close(fds[0]);
        return c;
    }
    char buf[1024];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && c.out.size() < max) c.out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    c.status = exit_status_of(status);
    if (c.out.size() > max) c.out.resize(max);
    return c;
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
