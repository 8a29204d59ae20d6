// probe.cpp: mountinfo parsing and the namespace/procfs trial.
#include "proc/probe.hpp"

#include <dirent.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "host/container_check.hpp"
#include "base/fault.hpp"
#include "base/file_read.hpp"
#include "priv/privdrop.hpp"
#include "base/unique_fd.hpp"

namespace clihost {
namespace {

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (pos < line.size()) {
        const auto start = line.find_first_not_of(' ', pos);
        if (start == std::string_view::npos) break;
        auto end = line.find(' ', start);
        if (end == std::string_view::npos) end = line.size();
        out.push_back(line.substr(start, end - start));
        pos = end;
    }
    return out;
}

// Child-side codes of the trial, reported through the exit status.
enum TrialCode { kTrialOk = 0, kTrialDropFailed = 10, kTrialNoUserns = 11, kTrialForkFailed = 12,
                 kTrialNoProc = 13, kTrialPrivateFailed = 14, kTrialProcessLimit = 15 };

// Written by the trial's child, in the memory it shares with its parent,
// just before it exits; kTrialNoReport until then (a child killed first).
constexpr int kTrialNoReport = 16;
volatile int trial_report = kTrialNoReport;
// A trial child not reaped yet (trial_namespaces_deferred), or 0.
pid_t unreaped_trial = 0;

// The trial's child: pid 1 of its new namespaces. It shares the caller's
// memory (CLONE_VM) while the caller is suspended (CLONE_VFORK), so it makes
// raw system calls only: no allocation, no libc state, no errno read.
// It reports its code in trial_report and as its exit status (glibc's
// clone() ends the child with the exit system call: no atexit handler of
// the parent's runs).
int trial_child(void*) {
    int code = kTrialOk;
    if (::syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) code = kTrialPrivateFailed;
    else if (::syscall(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
        code = kTrialNoProc;
    trial_report = code;
    return code;
}

// New user+mount+pid namespaces in one clone (the child is pid 1 there),
// which then mounts a fresh procfs. Returns a TrialCode. vfork-style
// (CLONE_VM | CLONE_VFORK): the child gets no copy of the address space,
// which a fork-style clone spent most of the trial's time on (bench: about
// 0.7 ms per launch on a 2-vCPU VM); it runs on a small stack of its own.
// We resume once the child has left our memory on its way out, its report
// written. The rest of its exit, the kernel tearing its namespaces down
// (about as long again as making them, mostly waiting for RCU), is waited
// for only with `reap`; else the child is reaped later (reap_trial(), or
// whoever reaps this process's children: see trial_namespaces_deferred).
int trial_clone(bool reap) {
    alignas(16) static char stack[16384];
    trial_report = kTrialNoReport;
    const int pid = fault::fail("probe")
                        ? -1
                        : ::clone(trial_child, stack + sizeof stack,
                                  CLONE_VM | CLONE_VFORK | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, nullptr);
    // EAGAIN: the uid is at its RLIMIT_NPROC, which says nothing about namespaces.
    if (pid < 0) return errno == EAGAIN ? kTrialProcessLimit : kTrialNoUserns;
    int code = trial_report;
    unreaped_trial = pid;
    // No report in our memory: the child was killed before it wrote one, or
    // it never shared our memory (valgrind runs a CLONE_VM | CLONE_VFORK
    // clone as a fork: bench --profile). Its exit status says which.
    if (code == kTrialNoReport) {
        int status = 0;
        pid_t got;
        while ((got = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
        unreaped_trial = 0;
        if (got == pid && WIFEXITED(status) && WEXITSTATUS(status) != kTrialNoReport) code = WEXITSTATUS(status);
    }
    if (reap) reap_trial();
    return code == kTrialNoReport ? kTrialForkFailed : code;
}

// "WHAT: WHY" when the container facts explain the failure (a seccomp filter,
// a mount over part of /proc, container_check.hpp), else WHAT.
std::string explained(const std::string& what, const std::string& why) { return why.empty() ? what : what + ": " + why; }

TrialResult describe(int code) {
    TrialResult r;
    switch (code) {
        case kTrialOk: r.user_namespaces = r.fresh_proc = true; break;
        case kTrialNoProc:
            r.user_namespaces = true;
            r.detail = explained("a fresh procfs cannot be mounted", why_no_fresh_proc(read_container_facts()));
            break;
        case kTrialPrivateFailed: r.user_namespaces = true; r.detail = "mount propagation cannot be made private"; break;
        case kTrialNoUserns:
            r.detail = explained("unprivileged user namespaces are not available", why_no_userns(read_container_facts()));
            break;
        case kTrialDropFailed: r.detail = "the trial could not drop privileges"; break;
        case kTrialProcessLimit:
            r.process_limit = true;
            r.detail = "the tenant's process limit (RLIMIT_NPROC) leaves no room for the namespace trial";
            break;
        default: r.detail = "the namespace trial failed"; break;
    }
    return r;
}

}  // namespace

bool mountinfo_proc_hidepid(std::string_view mountinfo) {
    bool hidden = false;
    bool seen = false;
    std::size_t pos = 0;
    while (pos < mountinfo.size()) {
        auto nl = mountinfo.find('\n', pos);
        if (nl == std::string_view::npos) nl = mountinfo.size();
        const auto f = fields(mountinfo.substr(pos, nl - pos));
        pos = nl + 1;
        // id parent major:minor root mountpoint options [optional...] - fstype source superopts
        if (f.size() < 5 || f[4] != "/proc") continue;
        seen = true;  // later lines are mounted on top of earlier ones
        hidden = false;
        std::size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") ++dash;
        // Fewer fields than fstype, source, superopts (an empty source prints
        // as nothing): unreadable, so this mount counts as not hiding (fail closed).
        if (dash + 3 >= f.size() || f[dash + 1] != "proc") continue;
        const std::string_view opts = f[dash + 3];
        std::size_t o = 0;
        while (o <= opts.size()) {
            auto comma = opts.find(',', o);
            if (comma == std::string_view::npos) comma = opts.size();
            const auto opt = opts.substr(o, comma - o);
            if (opt == "hidepid=invisible" || opt == "hidepid=2") hidden = true;
            o = comma + 1;
        }
    }
    return seen && hidden;
}

std::vector<HostPath> inspect_host_paths(const std::vector<std::string>& paths) {
    std::vector<HostPath> out;
    out.reserve(paths.size());
    for (const auto& p : paths) {
        HostPath hp{p, HostPath::Kind::absent, {}};
        struct stat st {};
        if (::lstat(p.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                hp.kind = HostPath::Kind::directory;
            } else if (S_ISLNK(st.st_mode)) {
                char buf[4096];
                const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
                if (n > 0) {
                    hp.kind = HostPath::Kind::symlink;
                    hp.target.assign(buf, static_cast<std::size_t>(n));
                }
            } else {
                hp.kind = HostPath::Kind::other;
            }
        }
        out.push_back(std::move(hp));
    }
    return out;
}

bool list_profile_d(std::vector<HostPath>& out) {
    constexpr std::size_t kMaxProfileEntries = 256;
    const std::string dir = "/etc/profile.d";
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return false;
    std::vector<std::string> names;
    bool ok = true;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        if (names.size() == kMaxProfileEntries) ok = false;
        else names.push_back(name);
    }
    ::closedir(d);
    if (!ok) return false;
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
        std::string path = dir;
        path += '/';
        path += n;
        auto hp = inspect_host_paths({path}).front();
        if (hp.kind != HostPath::Kind::absent) out.push_back(std::move(hp));
    }
    return true;
}

void reap_trial() {
    if (unreaped_trial <= 0) return;
    int status = 0;
    while (::waitpid(unreaped_trial, &status, 0) < 0 && errno == EINTR) {}
    unreaped_trial = 0;
}

TrialResult trial_namespaces_deferred() { return describe(trial_clone(false)); }

TrialResult trial_namespaces(uid_t uid, gid_t gid) {
    // Already unprivileged (the jail child after its drop): clone directly.
    if (::geteuid() != 0) return describe(trial_clone(true));
    const pid_t self = ::getpid();
    const pid_t pid = fault::fail("probe_fork") ? -1 : ::fork();
    if (pid < 0) return describe(kTrialForkFailed);
    // Drop fully before touching namespaces: the trial must not succeed
    // only because it ran as root.
    if (pid == 0) run_as_tenant(TenantCreds{uid, gid, {gid}}, self, SIGKILL, [] { return trial_clone(true); });
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return describe(kTrialForkFailed);
    return describe(WIFEXITED(status) ? WEXITSTATUS(status) : kTrialForkFailed);
}

HostProbe probe_host(const std::vector<std::string>& ro_bind, uid_t uid, gid_t gid, bool run_trial) {
    HostProbe p;
    if (run_trial) {
        const auto trial = trial_namespaces(uid, gid);
        p.user_namespaces = trial.user_namespaces;
        p.fresh_proc = trial.fresh_proc;
        p.trial_detail = trial.detail;
    } else {
        p.trial_deferred = true;
    }
    // Only a mode that may fall back to the host /proc asks whether it hides
    // other users' processes; a deferred trial means proc = private, which
    // never falls back, so the mountinfo parse would be wasted (host_proc_hidepid
    // stays false: nothing is known to hide, the fail-closed answer).
    // Unreadable or over 4 MiB: no /proc mount is known to hide anything (fail closed).
    if (run_trial) {
        const auto mountinfo = read_bounded("/proc/self/mountinfo", std::size_t{4} << 20);
        p.host_proc_hidepid = mountinfo && mountinfo_proc_hidepid(mountinfo.value());
    }
    p.paths = inspect_host_paths(ro_bind);
    p.profile_d_listed = list_profile_d(p.profile_d);
    return p;
}

}  // namespace clihost
