// launch.cpp: fork/exec/wait. Linear on purpose: every step checked.
#include "launch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fault.hpp"
#include "log.hpp"
#include "privdrop.hpp"
#include "probe.hpp"
#include "seccomp_filter.hpp"
#include "unique_fd.hpp"

namespace clihost {
namespace {

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

// Everything still our child once bwrap itself is gone is a remnant of the
// jail re-parented to us (we are its subreaper): bwrap's sandbox pid 1 whose
// --die-with-parent was not armed yet (bwrap killed during its setup), or
// one blocked forever after bwrap failed mid-setup. SIGKILL reaches a pid
// namespace's init from outside, and the kernel then kills its namespace.
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

sigset_t forwarded_and_child() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kForwardedSignals) sigaddset(&set, s);
    sigaddset(&set, SIGCHLD);
    return set;
}

}  // namespace

Status block_relayed_signals() {
    const sigset_t set = forwarded_and_child();
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    return ok_status();
}

Status prepare_socket_dir(const Account& tenant) {
    UniqueFd home(::open(tenant.home.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!home.valid()) return fail(Exit::refused, "cannot open home " + tenant.home);
    auto cache = open_own_dir(home.get(), ".cache", tenant.home + "/.cache", tenant.uid, false);
    if (!cache) return cache.error();
    auto tmux = open_own_dir(cache.value().get(), "tmux", tenant.home + "/.cache/tmux", tenant.uid, true);
    if (!tmux) return tmux.error();
    return ok_status();
}

namespace {

// The tenant's side of a launch, shared by every path into the jail: drop
// to the tenant, tie this process to its parent with `deathsig`, run the
// deferred probe, make the tmux socket directory.
Status become_tenant(const Plan& plan, const Tenant& tenant, bool make_socket_dir, pid_t expected_parent,
                     int deathsig) {
    const Account& t = tenant.account;
    if (auto st = drop_privileges(t.uid, t.gid, tenant.groups); !st) return st.error();
    // The drop cleared the parent-death signal (it is reset on credential
    // changes); set it again so this process dies with (or, for the
    // watcher, hears of the death of) its parent.
    // expected_parent was read before the fork: had the parent died before
    // this point, getppid() would already name init (or a subreaper).
    if (::prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0) != 0 || ::getppid() != expected_parent)
        return fail(Exit::internal, "cannot tie the jail to its parent");
    // The deferred host probe, now as the tenant: refuse before bwrap if a
    // fresh procfs cannot be mounted here (proc = private never falls back).
    if (plan.trial_in_child) {
        const auto trial = trial_namespaces(t.uid, t.gid);
        if (trial.process_limit) return fail(Exit::host, "cannot start the jail: " + trial.detail);
        if (!trial.user_namespaces)
            return fail(Exit::host, "user namespaces are unavailable: " + trial.detail);
        if (!trial.fresh_proc)
            return fail(Exit::host, "cannot mount a private /proc here (" + trial.detail + "); refusing (proc = private)");
    }
    if (make_socket_dir)
        if (auto st = prepare_socket_dir(t); !st) return st.error();
    return ok_status();
}

// Already the tenant: hand exactly the planned descriptors to bwrap and exec it.
Error exec_bwrap(const Plan& plan) {
    // Descriptors opened since start-up (syslog, PAM modules, NSS) must not
    // reach the jail: mark every fd above 2 close-on-exec.
    if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0)
        return fail(Exit::internal, "cannot mark descriptors close-on-exec");
    // The one descriptor bwrap is meant to get: its seccomp program, at the
    // number the plan names (dup2 leaves the copy without close-on-exec).
    auto program = seccomp_program_fd();
    if (!program) return program.error();
    if (::dup2(program.value().get(), kSeccompFd) != kSeccompFd || ::fcntl(kSeccompFd, F_SETFD, 0) != 0)
        return fail(Exit::internal, "cannot place the seccomp program");
    // sanitize_process ignored SIGXFSZ for the helper; the jail gets the default.
    if (::signal(SIGXFSZ, SIG_DFL) == SIG_ERR) return fail(Exit::internal, "cannot reset SIGXFSZ");
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

// Waits for `child` with the relayed signals (and SIGCHLD) blocked in `set`:
// passes each relayed signal on to it, and once it is gone SIGKILLs
// whatever was re-parented to us (we are a subreaper) until nothing is left.
// Returns the child's wait status (-1 if it was never reaped).
int supervise(pid_t child, const sigset_t& set) {
    int status = -1;
    bool reaped = false;
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
        const int sig = ::sigwaitinfo(&set, &info);
        if (sig < 0) {
            if (errno == EINTR) continue;
            // Cannot happen with a valid set; wait blocking instead of spinning.
            while (::waitpid(-1, &status, 0) > 0 || errno == EINTR) {}
            break;
        }
        // TERM/HUP/INT/QUIT (including our own parent-death SIGHUP): pass it
        // on; bwrap dies, and --die-with-parent takes the whole jail with it
        // (what it leaves behind comes to us and is SIGKILLed above).
        if (sig != SIGCHLD && !reaped) ::kill(child, sig);
    }
    return reaped ? status : -1;
}

// A wait status as an exit status: 128 + the signal, as a shell reports it.
int exit_status_of(int status) {
    if (status == -1) return static_cast<int>(Exit::internal);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return static_cast<int>(Exit::internal);
}

// The watcher, between the root parent and bwrap: the tenant, unprivileged,
// a subreaper. Its parent's death (even by SIGKILL, when nothing of the root
// parent runs any more) reaches it as SIGHUP, which it relays like any other:
// bwrap dies, and the sandbox that bwrap was still setting up, not yet armed
// with --die-with-parent, is re-parented to the watcher and SIGKILLed.
// Returns the exit status for the root parent; logs its own failures.
int watch_jail(const Plan& plan, const Tenant& tenant, bool make_socket_dir, pid_t root_parent, const sigset_t& set) {
    if (auto st = become_tenant(plan, tenant, make_socket_dir, root_parent, SIGHUP); !st) {
        log::refuse("fail", st.error().message);
        return static_cast<int>(st.error().code);
    }
    // The drop reset the dumpable flag to the system's suid_dumpable: this
    // copy of the helper's memory stays out of the tenant's ptrace and cores.
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        log::refuse("fail", "cannot set up the jail's watcher");
        return static_cast<int>(Exit::internal);
    }
    const pid_t self = ::getpid();
    const pid_t bwrap = fault::fail("fork_bwrap") ? -1 : ::fork();
    if (bwrap < 0) {
        log::refuse("fail", std::string("fork failed: ") + std::strerror(errno));
        return static_cast<int>(Exit::internal);
    }
    if (bwrap == 0) {
        // bwrap dies with the watcher until its own --die-with-parent is armed.
        Error e = ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != self
                      ? fail(Exit::internal, "cannot tie the jail to its parent")
                      : exec_bwrap(plan);
        log::refuse("fail", e.message);
        ::_exit(static_cast<int>(e.code));
    }
    return exit_status_of(supervise(bwrap, set));
}

}  // namespace

Error exec_jail(const Plan& plan, const Tenant& tenant, bool make_socket_dir, pid_t expected_parent) {
    if (auto st = become_tenant(plan, tenant, make_socket_dir, expected_parent, SIGKILL); !st) return st.error();
    return exec_bwrap(plan);
}

Result<int> run_supervised(const Plan& plan, const Tenant& tenant, bool make_socket_dir, PamSession& pam) {
    // Block the relayed signals before forking so none is lost between fork
    // and the wait loop (block_relayed_signals did so already before PAM).
    const sigset_t set = forwarded_and_child();
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    // Subreaper: should the watcher die first (the tenant may kill its own
    // processes), what it leaves of the jail comes to us, so the PAM session
    // is closed only once every process of the jail is gone.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        (void)pam.close();
        return fail(Exit::internal, "cannot become the jail's subreaper");
    }
    const pid_t self = ::getpid();
    const pid_t child = fault::fail("fork") ? -1 : ::fork();
    if (child < 0) {
        const std::string why = std::strerror(errno);
        (void)pam.close();
        return fail(Exit::internal, "fork failed: " + why);
    }
    if (child == 0) ::_exit(watch_jail(plan, tenant, make_socket_dir, self, set));
    const int status = supervise(child, set);
    const auto closed = pam.close();
    if (!closed) log::refuse("fail", closed.error().message);
    return exit_status_of(status);
}

}  // namespace clihost
