// clean_state.cpp: a clean root process (clean_state.hpp).
#include "proc/clean_state.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/keyctl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "proc/scheduling.hpp"

namespace clihost {
namespace {

// Fds 0-2 on /dev/null: no caller's terminal or pipe is held open by a
// session jail (a proxy waiting for EOF, or ttyd's pty, would never see it).
bool detach_stdio() {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) return false;
    for (int fd = 0; fd <= 2; ++fd)
        if (::dup2(null, fd) != fd) return false;
    return ::close(null) == 0;
}

}  // namespace

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

// A clean process (clean_state.hpp): root through and through (real, effective, saved ids 0,
// no supplementary groups: the caller that started it can no longer signal
// it), nothing of the caller's (fds, env, cwd, umask, signal dispositions,
// limits, scheduling, keyring). KEYCTL_JOIN_SESSION_KEYRING with no name: a fresh,
// anonymous session keyring, whatever pam_keyinit (optional) does later.
Status clean_state(int keep_fd) {
    if (::setresgid(0, 0, 0) != 0 || ::setgroups(0, nullptr) != 0 || ::setresuid(0, 0, 0) != 0)
        return fail(Exit::internal, "cannot become root through and through");
    // A change of ids resets the dumpable flag to fs.suid_dumpable (2 dumps
    // root's memory, PAM's data with it, through a core pipe): off again.
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return fail(Exit::internal, "cannot make the supervisor undumpable");
    if (::chdir("/") != 0) return fail(Exit::internal, "cannot change directory to /");
    ::umask(022);
    if (!detach_stdio() || ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) != 0)
        return fail(Exit::internal, "cannot detach the supervisor");
    // Every descriptor but stdio and the start-up report. syslog(3)'s
    // socket first, through closelog: glibc would otherwise later send to,
    // and close, whatever reuses its number (the start-up report, seen).
    ::closelog();
    if (keep_fd != 3 && (::dup2(keep_fd, 3) != 3 || ::close(keep_fd) != 0))
        return fail(Exit::internal, "cannot keep the start-up report");
    if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0) return fail(Exit::internal, "cannot close the caller's descriptors");
    ::openlog("clihost-jail", LOG_PID, LOG_AUTHPRIV);
    if (::clearenv() != 0) return fail(Exit::internal, "cannot clear the environment");
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) (void)::sigaction(sig, &dfl, nullptr);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    if (::sigaction(SIGPIPE, &ign, nullptr) != 0) return fail(Exit::internal, "cannot ignore SIGPIPE");
    // A caller's RLIMIT_FSIZE that this host lets nobody raise (no
    // CAP_SYS_RESOURCE): a write fails with EFBIG (and the start fails
    // closed, with its report) instead of killing the supervisor unheard.
    if (::sigaction(SIGXFSZ, &ign, nullptr) != 0) return fail(Exit::internal, "cannot ignore SIGXFSZ");
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    if (!apply_rlimits(baseline_rlimits())) return fail(Exit::internal, "cannot set the supervisor's limits");
    // The caller's nice value, policy, affinity, I/O priority, timer slack
    // and oom_score_adj: the defaults, PID 1's CPUs (a host that gives root
    // no CAP_SYS_NICE keeps what it cannot reset: said).
    for (const auto& left : reset_scheduling())
        log::audit("warn", "the caller's " + left + " could not be reset");
    // ENOSYS: a kernel without keyrings. EPERM: a seccomp filter denies
    // keyctl (Docker's default profile); filters are inherited and cannot
    // be lifted, so it denies every process started from here too, and no
    // process of the tenant can reach a keyring of the caller's. (A caller
    // cannot install such a filter over a setuid helper: without
    // no_new_privs it may not, and with it the setuid bit gives no root.)
    if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0 && errno != ENOSYS && errno != EPERM)
        return fail(Exit::host, std::string("cannot join a fresh session keyring: ") + std::strerror(errno));
    return ok_status();
}


}  // namespace clihost
