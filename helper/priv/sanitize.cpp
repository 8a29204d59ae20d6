// sanitize.cpp: the first thing main does.
#include "priv/sanitize.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <cstdlib>
#include <cstring>

#include "base/fault.hpp"
#include "base/validate.hpp"

namespace clihost {
namespace {

constexpr std::size_t kMaxCapturedEnv = 64;

// A closed 0/1/2 would let the next open() (a config or PAM file) become the
// caller's "stdout" and receive our error messages.
bool ensure_std_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int got = ::open("/dev/null", O_RDWR);
        if (got != fd) return false;
    }
    return true;
}

// An fd to a root-only file opened by the caller must never reach the jail.
bool close_other_fds() {
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return true;
    if (errno != ENOSYS && errno != EINVAL) return false;
    struct rlimit rl {};
    const long max = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY
                         ? static_cast<long>(rl.rlim_max) : 65536L;
    for (long fd = 3; fd < max; ++fd) ::close(static_cast<int>(fd));
    return true;
}

bool reset_signals() {
    // Ignored signals survive exec: a caller could ignore SIGCHLD to break
    // waitpid, or SIGTERM to make the jail unkillable.
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        struct sigaction sa {};
        sa.sa_handler = SIG_DFL;
        ::sigaction(sig, &sa, nullptr);  // EINVAL for the RT signals glibc reserves: fine
    }
    // A caller's RLIMIT_FSIZE must not kill the root helper mid-write (no
    // message, no audit line): writes fail with EFBIG instead. bwrap_exec.cpp
    // gives the jail the default disposition back.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    if (::sigaction(SIGXFSZ, &ignore, nullptr) != 0) return false;
    sigset_t none;
    sigemptyset(&none);
    return ::sigprocmask(SIG_SETMASK, &none, nullptr) == 0;
}

// Limits are inherited from the untrusted caller. A tiny RLIMIT_NOFILE makes
// bwrap fail half-way; RLIMIT_FSIZE 0 turns a write into SIGXFSZ. Raise the
// soft limits of these two as far as the caller's hard limits allow (raising
// a hard limit needs CAP_SYS_RESOURCE, which a container may not grant); the
// jail then gets the tenant's limits from pam_limits. What remains too low
// makes a later step fail closed with its own message.
bool raise_soft_limits() {
    for (const auto& [resource, want] : {std::pair{RLIMIT_NOFILE, rlim_t{1024}}, std::pair{RLIMIT_FSIZE, RLIM_INFINITY}}) {
        struct rlimit rl {};
        if (::getrlimit(resource, &rl) != 0) return false;
        const rlim_t target = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < target) {
            rl.rlim_cur = target;
            if (::setrlimit(resource, &rl) != 0) return false;
        }
    }
    return true;
}

}  // namespace

Result<StartState> sanitize_process(char** envp) {
    if (!ensure_std_fds()) return fail(Exit::internal, "cannot open /dev/null for fds 0-2");
    if (!close_other_fds()) return fail(Exit::internal, "cannot close inherited file descriptors");
    // The caller's working directory would be inherited by every process we
    // start, bwrap included, which runs as the tenant and is dumpable: the
    // tenant could then read the caller's private directory (say the proxy's
    // 0700 home) through /proc/<bwrap pid>/cwd/. Nothing here is relative.
    if (::chdir("/") != 0) return fail(Exit::internal, std::string("cannot change directory to /: ") + std::strerror(errno));
    // Not dumpable: no core file of a root process, and the (non-root) caller
    // cannot ptrace or read /proc/PID/mem of this process.
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return fail(Exit::internal, "cannot disable core dumps");
    const struct rlimit no_core {0, 0};
    if (::setrlimit(RLIMIT_CORE, &no_core) != 0) return fail(Exit::internal, "cannot disable core dumps");
    ::umask(022);
    if (!reset_signals()) return fail(Exit::internal, "cannot reset signal mask");
    if (!raise_soft_limits()) return fail(Exit::internal, "cannot raise resource limits");

    StartState s;
    s.creds.ruid = ::getuid();
    s.creds.euid = ::geteuid();
    s.creds.rgid = ::getgid();
    {
        uid_t r = 0, e = 0, su = 0;
        if (::getresuid(&r, &e, &su) != 0) return fail(Exit::internal, "getresuid failed");
        s.creds.suid = su;
        const int n = ::getgroups(0, nullptr);
        if (n < 0) return fail(Exit::internal, "getgroups failed");
        s.creds.groups.resize(static_cast<std::size_t>(n));
        if (n > 0 && ::getgroups(n, s.creds.groups.data()) != n) return fail(Exit::internal, "getgroups failed");
    }
    // Whoever started us; the waiting parent must not outlive them, so from
    // here their death is delivered to us as SIGHUP (a hangup, like a
    // terminal going away). If they already died, stop now.
    s.parent = ::getppid();
    if (::prctl(PR_SET_PDEATHSIG, SIGHUP, 0, 0, 0) != 0) return fail(Exit::internal, "cannot set parent-death signal");
    if (::getppid() != s.parent) return fail(Exit::internal, "caller exited during start-up");

    const bool real_root = s.creds.ruid == 0;
    for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
        const std::string_view kv(*e);
        const auto eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        const std::string name(kv.substr(0, eq));
        const std::string value(kv.substr(eq + 1, 4096));
        // Only root may point us at another policy or arm test faults; a
        // setuid caller setting these is ignored like any other variable.
        if (real_root && name == "SUDO_UID") s.creds.sudo_uid = value;
        else if (real_root && name == "CLIHOST_JAIL_CONFIG") s.config_override = value;
        else if (real_root && name == "CLIHOST_JAIL_FAULT") fault::arm(value);
        else if (is_valid_env_name(name) && !is_reserved_env_name(name) && value.size() <= 128 &&
                 s.caller_env.size() < kMaxCapturedEnv)
            s.caller_env.emplace(name, value);
    }
    // Nothing of the caller's environment survives: no LD_*, PATH, IFS, locale
    // paths, GCONV_PATH for libc or PAM modules to trip over.
    if (::clearenv() != 0) return fail(Exit::internal, "cannot clear the environment");
    return s;
}

}  // namespace clihost
