// bwrap_exec.cpp: from the tenant's process to bwrap's execve. May place
// descriptors, reset signal dispositions, clone the bwrap child (CLONE_VM:
// system calls only in it) and exec; decides nothing (the plan did).
#include "proc/bwrap_exec.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "base/fault.hpp"
#include "decide/proc_decision.hpp"
#include "priv/seccomp_filter.hpp"
#include "proc/probe.hpp"

namespace clihost {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
    std::vector<char*> out;
    out.reserve(v.size() + 1);
    for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

Status prove_private_proc(const Plan& plan) {
    if (!plan.trial_in_child) return ok_status();
    return judge_trial(trial_namespaces_deferred());
}

namespace {

// The steps of place_and_exec (and of the watcher's child) that can fail.
enum ExecStep : int { kStepNone = 0, kStepTie, kStepCgroup, kStepGroup, kStepGo, kStepStderr, kStepCloexec,
                      kStepPlace, kStepSignals, kStepExec };

Error exec_step_error(const Plan& plan, int step, int err) {
    switch (step) {
        case kStepTie: return fail(Exit::internal, "cannot tie the jail to its parent");
        case kStepCgroup:
            return fail(Exit::host, std::string("cannot enter the tenant's jails cgroup: ") + std::strerror(err));
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
    std::vector<std::pair<int, int>> wanted{{program.value().get(), kSeccompFd}, {fds.status, kStatusFd},
                                            {fds.info, kInfoFd},   {fds.block, kBlockFd},
                                            {fds.resolv, kResolvFd}, {fds.attach, kAttachFd}};
    for (std::size_t i = 0; i < fds.data.size(); ++i) wanted.emplace_back(fds.data[i], kDataFd + static_cast<int>(i));
    for (const auto& [fd, at] : wanted) {
        if (fd < 0) continue;
        UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, kDataFd + static_cast<int>(kMaxDataFiles)));
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
    // Into the tenant's jails leaf, where its limits are (the watcher stays
    // in the supervisor's): "0" is the writer.
    if (c.fault_cgroup) return bwrap_child_fails(c, kStepCgroup, EACCES);  // the injected failure (tests)
    for (const int fd : c.jails)
        if (::write(fd, "0", 1) != 1) return bwrap_child_fails(c, kStepCgroup, errno);
    if (c.own_session ? ::setsid() < 0 : !leave_process_group()) return bwrap_child_fails(c, kStepGroup, 0);
    if (c.go_fd >= 0 && !await_watcher(c.go_fd)) return bwrap_child_fails(c, kStepGo, 0);
    if (c.stderr_fd >= 0 && ::dup2(c.stderr_fd, 2) != 2) return bwrap_child_fails(c, kStepStderr, 0);
    int err = 0;
    const int step = place_and_exec(c.exec, err);
    return bwrap_child_fails(c, step, err);
}

}  // namespace

Result<pid_t> start_bwrap_child(BwrapChild& c, const Plan& plan, pid_t watcher, bool own_session, int stderr_fd,
                                int go_fd, const JailFds& fds, const std::vector<UniqueFd>* jails) {
    auto exec = prepare_bwrap_exec(plan, fds);
    if (!exec) return exec.error();
    c.exec = std::move(exec).value();
    c.fault_cgroup = fault::fail("enter_jails");
    c.jails.clear();
    if (jails != nullptr)
        for (const auto& fd : *jails) c.jails.push_back(fd.get());
    c.watcher = watcher;
    c.own_session = own_session;
    c.stderr_fd = stderr_fd;
    c.go_fd = go_fd;
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) return fail(Exit::internal, "cannot prepare the jail's start");
    c.err_read.reset(err[0]);
    // Above every number the child places a descriptor on.
    const UniqueFd err_write(::fcntl(err[1], F_DUPFD_CLOEXEC, kAttachFd + 1));  // ours closes on return
    ::close(err[1]);
    if (!err_write.valid()) return fail(Exit::internal, "cannot prepare the jail's start");
    c.err_write = err_write.get();
    // The child's stack: one per watcher, used by one child only.
    alignas(16) static char stack[64 * 1024];
    const int pid = fault::fail("fork_bwrap") ? -1 : ::clone(bwrap_child_main, stack + sizeof stack, CLONE_VM | SIGCHLD, &c);
    if (pid < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    return static_cast<pid_t>(pid);
}

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

}  // namespace clihost
